from tags import add_tag, has_tag


def test_a_tag_is_added_once():
    assert add_tag("x", ["a"]) == ["a", "x"]
    assert add_tag("a", ["a"]) == ["a"]


def test_has_tag_ignores_case():
    assert has_tag(["Work"], "work")
