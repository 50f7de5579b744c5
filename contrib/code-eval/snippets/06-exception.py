# expect: nonzero
def f(x):
    return 1 / x
print(f(0))
