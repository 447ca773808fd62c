"""tools/datasketch_suite.py hands neardup's classes to tests written for datasketch: run on a
stand-in checkout whose tests import the way datasketch's do."""
import os
import subprocess
import sys
import textwrap

SUITE = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "datasketch_suite.py")


def test_the_suite_runs_tests_written_for_datasketch_on_neardup(tmp_path):
    tests = tmp_path / "test"
    tests.mkdir()
    (tests / "__init__.py").write_text("")
    (tests / "utils.py").write_text("def fake_hash_func(data):\n    return data\n")
    (tests / "test_shim.py").write_text(textwrap.dedent("""
        import pytest
        import mockredis
        from datasketch import MinHash, WeightedMinHashGenerator
        from datasketch.hyperloglog import HyperLogLog
        from datasketch.hnsw import HNSW
        from datasketch.lsh import MinHashLSH
        from test.utils import fake_hash_func
        import neardup.datasketch as nd

        def test_neardups_classes():
            assert MinHash is nd.MinHash and MinHashLSH is nd.MinHashLSH and HyperLogLog is nd.HyperLogLog
            assert MinHash.__module__ == "neardup.datasketch"
            h = HyperLogLog(4, hashfunc=fake_hash_func)
            h.update(0b00011111)
            assert h.reg[0b1111] == 28

        def test_a_class_neardup_lacks_fails_when_used():
            with pytest.raises(NotImplementedError, match="does not have it"):
                HNSW()

        def test_redis_is_deselected():
            mockredis.mock_redis_client()
    """))
    run = subprocess.run([sys.executable, SUITE, str(tmp_path), "test_shim.py"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 passed, 1 deselected" in run.stdout
    missing = subprocess.run([sys.executable, SUITE, str(tmp_path / "nowhere")], capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "no test/ directory" in missing.stderr
