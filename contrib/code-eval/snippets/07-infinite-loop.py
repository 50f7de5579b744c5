# expect: timed_out
while True:
    pass
