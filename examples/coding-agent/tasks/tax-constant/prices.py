def total(price):
    """The price with 20% tax."""
    return round(price * 1.2, 2)


def tax(price):
    """The tax on a price."""
    return round(price * 0.2, 2)
