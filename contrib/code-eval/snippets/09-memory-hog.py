# expect: oom_killed
hog = []
while True:
    hog.append(bytearray(16 << 20))  # touched: bytearray zero-fills
