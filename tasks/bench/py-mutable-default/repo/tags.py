"""Labels attached to notes."""


def add_tag(tag, tags=[]):
    """Returns `tags` with `tag` added once; without `tags`, a new list holding only `tag`."""
    if tag not in tags:
        tags.append(tag)
    return tags


def has_tag(tags, tag):
    """Whether `tag` is among `tags`, ignoring case."""
    return tag.lower() in (t.lower() for t in tags)
