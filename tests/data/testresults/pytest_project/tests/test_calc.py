import sys
import pytest
from calc import add


def test_adds():
    assert add(1, 2) == 3


def test_adds_wrong():
    print("garbage on stdout <testcase> & stuff")
    assert add(2, 2) == 5


@pytest.mark.parametrize("a,b,want", [(1, 2, 3), (2, 2, 5), ("x", "y", "xy")])
def test_param(a, b, want):
    assert add(a, b) == want


@pytest.mark.parametrize("s", ["a::b", "with space", "br[ack]et"])
def test_weird_ids(s):
    assert s


@pytest.mark.skip(reason="not today")
def test_skipped():
    pass


@pytest.mark.xfail(reason="known bug")
def test_xfail():
    assert False


@pytest.mark.xfail(reason="should fail", strict=True)
def test_xpass_strict():
    assert True


class TestGroup:
    def test_in_class(self):
        assert True

    def test_in_class_fails(self):
        raise ValueError("bad value\nsecond line")

    class TestInner:
        @pytest.mark.parametrize("n", [1, 2])
        def test_inner(self, n):
            assert n == 1


@pytest.fixture
def broken_fixture():
    raise RuntimeError("fixture exploded")


def test_fixture_error(broken_fixture):
    pass


@pytest.fixture
def teardown_fails():
    yield
    raise RuntimeError("teardown exploded")


def test_teardown_error(teardown_fails):
    pass


def test_exits_output():
    sys.stdout.write("no newline")


def test_slow():
    import time
    time.sleep(0.05)
