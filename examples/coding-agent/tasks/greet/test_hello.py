from hello import greet, hello

assert hello() == "Hello!", hello()
assert greet("Ada") == "Hello, Ada!", greet("Ada")
print("test_hello: 2 checks passed")
