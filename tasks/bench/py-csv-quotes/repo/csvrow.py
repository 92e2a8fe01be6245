"""Writing CSV lines (RFC 4180) for the export."""


def _field(value):
    text = str(value)
    if "," in text or '"' in text or "\n" in text:
        return '"' + text + '"'
    return text


def format_row(fields):
    """One CSV line for `fields`: a value holding a comma, a double quote or a newline is quoted."""
    return ",".join(_field(f) for f in fields)
