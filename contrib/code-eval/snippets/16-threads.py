# expect: ok
from concurrent.futures import ThreadPoolExecutor
with ThreadPoolExecutor(8) as ex:
    print(sum(ex.map(lambda i: i * i, range(1000))))
