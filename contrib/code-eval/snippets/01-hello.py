# expect: ok
print("hello from the sandbox")
