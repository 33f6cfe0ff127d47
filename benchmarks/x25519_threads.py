"""Whether X25519 key agreement and small AEAD calls of ``cryptography`` run
in parallel on threads (issue 22's workers line).

The secure round's key agreement and the decryption of the key shares run
inside ``cryptography``; if its calls hold the GIL, a thread pool cannot
spread them.  This times ``exchange`` (and a 64-byte AES-GCM decryption) on
one thread, then the same work on two threads at once, and prints the
throughput of two threads over one (2.0 on 2 free cores when the GIL is
released, about 1.0 when it is held).  Wall time: the question is how much
runs at the same time.

Usage::

    python benchmarks/x25519_threads.py [--calls 3000]

Run it with another ``cryptography`` on ``PYTHONPATH`` to check a newer
release, e.g. after ``pip install --no-deps --target /tmp/cry cryptography==X``.
Where PyNaCl is importable (it is not a pyfkm dependency; e.g. ``pip install
--target /tmp/nacl pynacl`` and ``/tmp/nacl`` on ``PYTHONPATH``), the same
exchange through libsodium (``nacl.bindings.crypto_scalarmult``, whose cffi
calls release the GIL) is timed too, as the measured alternative.
"""
import argparse
import threading
import time

import cryptography
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM


def throughput(work, threads):
    """Wall seconds for ``threads`` threads each running ``work`` once."""
    ts = [threading.Thread(target=work) for _ in range(threads)]
    t = time.perf_counter()
    for x in ts:
        x.start()
    for x in ts:
        x.join()
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=3000, help="calls per thread")
    a = ap.parse_args()
    n = a.calls
    key = X25519PrivateKey.generate()
    peers = [X25519PrivateKey.generate().public_key() for _ in range(64)]
    aead = AESGCM(AESGCM.generate_key(128))
    nonce = bytes(12)
    ct = aead.encrypt(nonce, bytes(64), None)

    def exchanges():
        for i in range(n):
            key.exchange(peers[i & 63])

    def decrypts():
        for _ in range(n):
            aead.decrypt(nonce, ct, None)

    cases = [(f"cryptography {cryptography.__version__}: X25519 exchange", exchanges),
             ("AES-GCM decrypt, 64 B", decrypts)]
    try:
        import nacl
        from nacl.bindings import crypto_scalarmult
    except ImportError:
        print("PyNaCl not importable: libsodium's X25519 not timed")
    else:
        sk = key.private_bytes_raw()
        pks = [p.public_bytes_raw() for p in peers]

        def sodium():
            for i in range(n):
                crypto_scalarmult(sk, pks[i & 63])

        cases.append((f"PyNaCl {nacl.__version__} (libsodium): X25519", sodium))
    for name, work in cases:
        t1 = throughput(work, 1)
        t2 = throughput(work, 2)
        print(f"  {name}: {t1 / n * 1e6:.1f} us per call on one thread; "
              f"two threads: {2 * t1 / t2:.2f}x the throughput of one")


if __name__ == "__main__":
    main()
