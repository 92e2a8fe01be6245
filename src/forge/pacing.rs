//! Pacing under the forges' rate limits: content-creating requests (a pull request, a comment, a status) at
//! most [`WRITES_PER_MINUTE`] a minute, under GitHub's secondary limit of about 80, and the waits a forge asks
//! for (`Retry-After`, or `x-ratelimit-remaining: 0` until `x-ratelimit-reset`) honoured. The waits are pure
//! functions of the headers; [`Pacer`] holds the clock.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Content-creating requests a minute, at most.
pub const WRITES_PER_MINUTE: u32 = 60;
/// The longest wait vouch accepts from a forge before giving up with the error.
pub const MAX_WAIT: Duration = Duration::from_secs(120);

/// How long the headers of an answer ask the client to wait before the next request, if at all.
/// `status` matters because `Retry-After` on 403/429 means "slow down", while `x-ratelimit-remaining: 0`
/// means the budget is spent until the reset time (seconds since the epoch).
pub fn wait_from_headers(
    status: u16,
    retry_after: Option<&str>,
    remaining: Option<&str>,
    reset: Option<&str>,
    now_epoch: u64,
) -> Option<Duration> {
    if let Some(secs) = retry_after.and_then(|v| v.trim().parse::<u64>().ok()) {
        if matches!(status, 403 | 429 | 503) || secs > 0 {
            return Some(Duration::from_secs(secs));
        }
    }
    let spent = remaining.and_then(|v| v.trim().parse::<u64>().ok()) == Some(0);
    if spent {
        let reset = reset.and_then(|v| v.trim().parse::<u64>().ok())?;
        return Some(Duration::from_secs(reset.saturating_sub(now_epoch).max(1)));
    }
    None
}

/// Seconds since the epoch now.
pub fn now_epoch() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The clock of one client: when the next request, and the next write, may go.
#[derive(Debug)]
pub struct Pacer {
    interval: Duration,
    last_write: Option<Instant>,
    not_before: Option<Instant>,
}

impl Default for Pacer {
    fn default() -> Self {
        Pacer::new(WRITES_PER_MINUTE)
    }
}

impl Pacer {
    pub fn new(writes_per_minute: u32) -> Pacer {
        Pacer {
            interval: Duration::from_secs(60) / writes_per_minute.max(1),
            last_write: None,
            not_before: None,
        }
    }

    /// How long to wait before a request (a write also keeps its distance from the last write).
    pub fn delay(&self, write: bool, now: Instant) -> Duration {
        let mut until = self.not_before;
        if write {
            if let Some(last) = self.last_write {
                let next = last + self.interval;
                until = Some(until.map_or(next, |u| u.max(next)));
            }
        }
        until.map_or(Duration::ZERO, |u| u.saturating_duration_since(now))
    }

    /// Records a request that went out now.
    pub fn sent(&mut self, write: bool, now: Instant) {
        if write {
            self.last_write = Some(now);
        }
    }

    /// Records a wait a forge asked for.
    pub fn back_off(&mut self, wait: Duration, now: Instant) {
        self.not_before = Some(now + wait);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_say_how_long_to_wait() {
        assert_eq!(
            wait_from_headers(200, None, Some("10"), Some("99"), 50),
            None
        );
        assert_eq!(
            wait_from_headers(403, Some("7"), None, None, 0),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            wait_from_headers(200, None, Some("0"), Some("160"), 100),
            Some(Duration::from_secs(60))
        );
        assert_eq!(
            wait_from_headers(403, None, Some("0"), Some("90"), 100),
            Some(Duration::from_secs(1))
        );
        assert_eq!(wait_from_headers(429, Some("soon"), None, None, 0), None);
    }

    #[test]
    fn writes_keep_their_distance() {
        let t0 = Instant::now();
        let mut p = Pacer::new(60);
        assert_eq!(p.delay(true, t0), Duration::ZERO);
        p.sent(true, t0);
        assert_eq!(p.delay(false, t0), Duration::ZERO);
        assert_eq!(p.delay(true, t0), Duration::from_secs(1));
        p.back_off(Duration::from_secs(5), t0);
        assert_eq!(p.delay(false, t0), Duration::from_secs(5));
    }
}
