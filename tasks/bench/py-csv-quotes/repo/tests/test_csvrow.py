import csv

from csvrow import format_row


def test_plain_values_are_joined_with_commas():
    assert format_row(["a", 1, "b"]) == "a,1,b"


def test_a_value_with_a_comma_is_quoted_and_reads_back():
    line = format_row(["x,y", "z"])
    assert next(csv.reader([line])) == ["x,y", "z"]
