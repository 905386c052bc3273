from app import add

assert add(2, 3) == 5, f"add(2, 3) returned {add(2, 3)}, expected 5"
assert add(-1, 1) == 0, f"add(-1, 1) returned {add(-1, 1)}, expected 0"
print("test_app: 2 checks passed")
