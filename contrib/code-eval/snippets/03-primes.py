# expect: ok
n = 200_000
sieve = bytearray([1]) * (n + 1)
sieve[0:2] = b"\0\0"
for i in range(2, int(n ** 0.5) + 1):
    if sieve[i]:
        sieve[i * i :: i] = bytearray(len(sieve[i * i :: i]))
print("primes below", n, ":", sum(sieve))
