# expect: ok
import json
doc = {"a": [1, 2, 3], "b": {"c": None, "d": "\u00e9"}}
assert json.loads(json.dumps(doc)) == doc
print(json.dumps(doc, sort_keys=True))
