#!/usr/bin/env python3
"""Runs datasketch's own test files against neardup.datasketch: a package named ``datasketch``
that hands out neardup's classes is put first on the path, so the tests import neardup's where
they import datasketch's.

    tools/datasketch_suite.py DATASKETCH_CHECKOUT [TEST_FILE ...] [-- PYTEST_ARGS ...]

DATASKETCH_CHECKOUT is a clone of https://github.com/ekzhu/datasketch made for the check (its
code is not copied into this repository). TEST_FILE defaults to the test files of the classes
neardup.datasketch has. The Redis, Cassandra and GPU cases are deselected: neardup keeps its
indexes in memory and runs on the CPU. A class neardup.datasketch does not have is a stand-in
that fails when used, so the tests that need it fail, one by one, and the others still run.
Needs neardup importable (PYTHONPATH, or build/python after make) and python3-pytest.
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# datasketch's modules and the names its tests import from each.
MODULES = {
    "minhash": ["MinHash"],
    "lean_minhash": ["LeanMinHash"],
    "lsh": ["MinHashLSH", "MinHashLSHInsertionSession", "MinHashLSHDeletionSession"],
    "b_bit_minhash": ["bBitMinHash"],
    "weighted_minhash": ["WeightedMinHash", "WeightedMinHashGenerator"],
    "lshforest": ["MinHashLSHForest"],
    "lshensemble": ["MinHashLSHEnsemble"],
    "hyperloglog": ["HyperLogLog", "HyperLogLogPlusPlus"],
    "lsh_bloom": ["MinHashLSHBloom", "BloomTable"],
    "hashfunc": ["sha1_hash32", "sha1_hash64"],
    "hnsw": ["HNSW"],
}
DEFAULT_TESTS = ["test_minhash.py", "test_lean_minhash.py", "test_lsh.py", "test_weighted_minhash.py", "test_lshforest.py",
                 "test_lshensemble.py", "test_hyperloglog.py", "test_lshbloom.py"]

SHIM_MODULE = '''"""datasketch.{module}, as neardup.datasketch has it (tools/datasketch_suite.py)."""
import neardup.datasketch as _nd


def _missing(name):
    def fail(*args, **kwargs):
        raise NotImplementedError(name + ": neardup.datasketch does not have it")
    return type(name, (), {{"__init__": fail, "__new__": lambda cls, *a, **k: fail()}})


for _name in {names!r}:
    globals()[_name] = getattr(_nd, _name, None) or _missing(_name)
'''

# test_lsh.py and test_lshensemble.py import mockredis at the top for their Redis cases, which
# are deselected; this stand-in lets the rest of those files load.
MOCKREDIS = '''def mock_redis_client(**kwargs):
    raise NotImplementedError("Redis storage: neardup.datasketch keeps its indexes in memory")
'''


def make_shim(tmp):
    pkg = os.path.join(tmp, "datasketch")
    os.makedirs(pkg)
    names = []
    for module, module_names in MODULES.items():
        with open(os.path.join(pkg, module + ".py"), "w") as f:
            f.write(SHIM_MODULE.format(module=module, names=module_names))
        names += [(module, n) for n in module_names]
    with open(os.path.join(pkg, "__init__.py"), "w") as f:
        f.write('"""datasketch, as neardup.datasketch has it (tools/datasketch_suite.py)."""\n')
        for module, n in names:
            f.write(f"from .{module} import {n}\n")
    with open(os.path.join(tmp, "mockredis.py"), "w") as f:
        f.write(MOCKREDIS)


def neardup_path():
    """The directory neardup is imported from: the first on PYTHONPATH that holds the package,
    else the build's (build/python after make)."""
    for path in os.environ.get("PYTHONPATH", "").split(os.pathsep) + [os.path.join(ROOT, "build", "python")]:
        if path and os.path.isfile(os.path.join(path, "neardup", "__init__.py")):
            return os.path.abspath(path)
    return None


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 2
    checkout, rest = argv[0], argv[1:]
    pytest_args = []
    if "--" in rest:
        i = rest.index("--")
        rest, pytest_args = rest[:i], rest[i + 1:]
    tests = rest or DEFAULT_TESTS
    src = os.path.join(checkout, "test")
    if not os.path.isdir(src):
        print(f"datasketch_suite: {checkout} has no test/ directory; give a clone of datasketch", file=sys.stderr)
        return 2
    python = neardup_path()
    if python is None:
        print("datasketch_suite: no neardup package on PYTHONPATH nor in build/python; run make first", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        make_shim(tmp)
        shutil.copytree(src, os.path.join(tmp, "test"))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([tmp, python]))
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "not redis and not cassandra and not gpu"]
        cmd += [os.path.join("test", t) for t in tests] + pytest_args
        return subprocess.call(cmd, cwd=tmp, env=env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
