//! Release versions of the form `MAJOR.MINOR.PATCH`.

/// The three numbers of `version`, or `None` when it is not of the form `MAJOR.MINOR.PATCH`.
pub fn parse(version: &str) -> Option<(u32, u32, u32)> {
    let mut parts = version.trim().split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    let patch = parts.next()?.parse().ok()?;
    if parts.next().is_some() {
        return None;
    }
    Some((major, minor, patch))
}

/// The newest of `versions`; versions that do not parse are ignored. `None` when none parses.
pub fn newest<'a>(versions: &[&'a str]) -> Option<&'a str> {
    versions
        .iter()
        .copied()
        .filter(|v| parse(v).is_some())
        .max()
}
