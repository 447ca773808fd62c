#!/usr/bin/env python3
"""Computes neardup's pinned hash values from their written definitions (docs/format.md), with
nothing from the C++ code, and checks them against the values the C++ known-answer tests pin
(tests/unit/shingle_test.cpp, tests/unit/minhash_test.cpp).

    known_answers.py          prints every value
    known_answers.py --check  exits 1 if a value differs from the pinned one (run by ctest)

Two independent implementations agreeing on the same constants is what makes the constants
trustworthy: a change to a definition shows up here or in the C++ tests, never silently.
"""
import sys

M64 = (1 << 64) - 1
DEFAULT_SEED = 0x6E65617264757021  # "neardup!"
GOLDEN = 0x9E3779B97F4A7C15
K0, K1, K2, K3 = 0x243F6A8885A308D3, 0x13198A2E03707344, 0xA4093822299F31D0, 0x082EFA98EC4E6C89


def mum(x, y):
    p = (x & M64) * (y & M64)
    return (p & M64) ^ (p >> 64)


def fmix64(k):
    """MurmurHash3's 64-bit finaliser."""
    k &= M64
    k ^= k >> 33
    k = (k * 0xFF51AFD7ED558CCD) & M64
    k ^= k >> 33
    k = (k * 0xC4CEB9FE1A85EC53) & M64
    k ^= k >> 33
    return k


def splitmix64(state):
    """One SplitMix64 step: (new state, output)."""
    state = (state + GOLDEN) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return state, z ^ (z >> 31)


def word_hash(word: bytes, seed: int) -> int:
    """16-byte chunks (the last zero-padded), each two little-endian words (a, b)."""
    acc = seed
    for i in range(0, len(word), 16):
        chunk = word[i:i + 16].ljust(16, b"\0")
        a = int.from_bytes(chunk[:8], "little")
        b = int.from_bytes(chunk[8:], "little")
        acc = mum(a ^ K0 ^ acc, b ^ K1)
    return mum(acc ^ K2, len(word) ^ K3)


def rotl64(x, r):
    r %= 64
    return ((x << r) | (x >> (64 - r))) & M64 if r else x


def combine_shingle(tokens, s2):
    """A shingle of n token hashes, given s2 = fmix64(seed + 0x5348494E474C45)."""
    x = 0
    for j, h in enumerate(tokens):
        x ^= rotl64(h, 23 * j)
    return fmix64(s2 ^ ((len(tokens) * GOLDEN) & M64) ^ x)


def minhash(shingles, num_perm, seed):
    """k-permutation MinHash: multipliers a_i from SplitMix64 (a_i |= 1), key lo32 ^ hi32."""
    state, mults = seed, []
    for _ in range(num_perm):
        state, a = splitmix64(state)
        mults.append(a | 1)
    keys = [(s & 0xFFFFFFFF) ^ (s >> 32) for s in shingles]
    return [min((((a * x) & M64) >> 32) for x in keys) if keys else 0xFFFFFFFF for a in mults]


def answers():
    return [
        ("fmix64(1)", fmix64(1), 0xB456BCFC34C2CB2C),
        ("splitmix64(state 0)", splitmix64(0)[1], 0xE220A8397B1DCDAF),
        ("word_hash('hello', default seed)", word_hash(b"hello", DEFAULT_SEED), 0x1CD9CB8046CDCF04),
        ("word_hash('internationalization', default seed)", word_hash(b"internationalization", DEFAULT_SEED), 0x5DC695710AAAB585),
        ("word_hash('a', seed 0)", word_hash(b"a", 0), 0x3904F4D1F4B004E2),
        ("shingle of tokens (1, 2, 3), s2 = 42", combine_shingle([1, 2, 3], 42), 0x56A086EF56CE0ABA),
        ("minhash 4 values of {1, 2, 3}, default seed", tuple(minhash([1, 2, 3], 4, DEFAULT_SEED)),
         (0x25C10CBD, 0x09376C5C, 0x530076C9, 0x1B103A9A)),
    ]


def show(v):
    return "(" + ", ".join(f"0x{x:08X}" for x in v) + ")" if isinstance(v, tuple) else f"0x{v:016X}"


def main(argv):
    check = "--check" in argv
    bad = 0
    for name, got, pinned in answers():
        ok = got == pinned
        bad += not ok
        print(f"{'ok ' if ok else 'BAD'} {name}: {show(got)}" + ("" if ok else f" (pinned {show(pinned)})"))
    if check and bad:
        print(f"known_answers: {bad} value(s) differ from the pinned ones", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
