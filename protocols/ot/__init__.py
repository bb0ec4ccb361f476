"""Oblivious transfer among providers: base OTs, IKNP extension, Gilboa bit products.

Semi-honest, for the dealer-free offline phase (issue 39):

* :mod:`protocols.ot.group`: the RFC 3526 2048-bit MODP group and checks of
  received elements.
* :mod:`protocols.ot.base`: 128 base OTs per ordered pair of providers
  (Chou and Orlandi, "The Simplest Protocol for Oblivious Transfer",
  LATINCRYPT 2015, run semi-honestly).
* :mod:`protocols.ot.matrix`: the local bit work of the extension: seed
  expansion with AES-CTR, the 128 x m bit-matrix transpose and the
  tweakable correlation-robust hash from fixed-key AES.
* :mod:`protocols.ot.extension`: IKNP OT extension (Ishai, Kilian, Nissim and
  Petrank, CRYPTO 2003) producing correlated OTs of 64-bit ring words, the
  form Gilboa's product (CRYPTO 1999) needs: ``y * x`` for a sender's ring
  word ``x`` and a receiver's bit ``y`` costs one extended OT.
* :mod:`protocols.ot.links`: every provider's extension state toward every
  other provider, set up once per group.
"""
