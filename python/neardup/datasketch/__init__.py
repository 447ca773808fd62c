"""A drop-in for datasketch's sketches and indexes (datasketch 1.10's public surface) that gives
the same values, with the batch paths in C++: MinHash, LeanMinHash and MinHashLSH
(minhash.py, lsh.py), bBitMinHash (b_bit_minhash.py), WeightedMinHash and
WeightedMinHashGenerator (weighted_minhash.py), HyperLogLog and HyperLogLogPlusPlus
(hyperloglog.py), MinHashLSHForest (lshforest.py), MinHashLSHEnsemble (lshensemble.py),
MinHashLSHBloom (lsh_bloom.py).

    from neardup.datasketch import MinHash, MinHashLSH   # instead of: from datasketch import ...

The definitions are datasketch's, written again here:

* a value is hashed to 32 bits by ``hashfunc`` (by default the first four bytes of its SHA-1
  digest, read little-endian);
* permutation i maps a hash x to ``((a_i * x + b_i) mod (2^61 - 1)) & (2^32 - 1)``, the product
  and the sum wrapping at 64 bits as NumPy's uint64 arithmetic does; the a_i and b_i are drawn
  with NumPy's legacy ``RandomState(seed)``: for each permutation, ``randint(1, 2^61 - 1)``
  then ``randint(0, 2^61 - 1)``;
* hash value i is the minimum of permutation i over the values, ``2^32 - 1`` when there are none;
* the LSH bands (b, r) minimise ``w_fp * FP + w_fn * FN`` over b * r <= num_perm, FP and FN
  the integrals of the S-curve below and above the threshold; a band's key is its hash values
  as big-endian 64-bit words.

With the default hash function, ``update_batch``, ``bulk`` and ``generator`` hash and permute in
C++ (``bulk`` in parallel over documents): SHA-1 reads the bytes values in place with the GIL
held, the permutations run without it. Any other ``hashfunc`` is called from Python for each
value, as datasketch does, and only the permutations run in C++.
"""
from .b_bit_minhash import bBitMinHash
from .hyperloglog import HyperLogLog, HyperLogLogPlusPlus, sha1_hash64
from .lsh import MinHashLSH, MinHashLSHDeletionSession, MinHashLSHInsertionSession
from .lshensemble import MinHashLSHEnsemble
from .lsh_bloom import BloomTable, MinHashLSHBloom
from .lshforest import MinHashLSHForest
from .minhash import LeanMinHash, MinHash, sha1_hash32
from .weighted_minhash import WeightedMinHash, WeightedMinHashGenerator

__all__ = ["MinHash", "LeanMinHash", "MinHashLSH", "sha1_hash32", "MinHashLSHInsertionSession",
           "MinHashLSHDeletionSession", "WeightedMinHash", "WeightedMinHashGenerator", "bBitMinHash",
           "HyperLogLog", "HyperLogLogPlusPlus", "sha1_hash64", "MinHashLSHForest", "MinHashLSHEnsemble",
           "MinHashLSHBloom", "BloomTable"]

# Pickles name the classes by this package, wherever a class is defined: a pickle made by one
# version of neardup loads in another.
for _name in __all__:
    _obj = globals()[_name]
    if isinstance(_obj, type):
        _obj.__module__ = __name__
del _name, _obj
