# expect: nonzero
import sys
print("wrong answer")
sys.exit(3)
