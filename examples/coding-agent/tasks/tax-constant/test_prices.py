from prices import tax, total

assert total(10) == 12.0, total(10)
assert tax(10) == 2.0, tax(10)
assert total(0.5) == 0.6, total(0.5)
print("test_prices: 3 checks passed")
