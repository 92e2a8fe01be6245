from prices import discounted, order_total


def test_an_order_pays_for_its_items_and_shipping():
    assert order_total(1000, 2, 500) == 2500


def test_a_discount_rounds_down():
    assert discounted(999, 10) == 899
