"""Order prices, in cents."""


def order_total(price, quantity, shipping, free_shipping=False):
    """The total of an order: price times quantity, plus shipping unless shipping is free."""
    return price * quantity + shipping if not free_shipping else 0


def discounted(price, percent):
    """`price` reduced by `percent` per cent, rounded down to a whole cent."""
    return price * (100 - percent) // 100
