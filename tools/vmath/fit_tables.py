#!/usr/bin/env python3
"""Writes src/backend/cpu/vec_tables.h: the coefficients of brisk's float32
erf and tanh on AVX-512 (vec::erf_f32 and vec::tanh_f32 in
src/backend/cpu/vec_math.h).

  python3 tools/vmath/fit_tables.py > src/backend/cpu/vec_tables.h

Needs mpmath (Debian's python3-mpmath). erf in two pieces:
- |x| < 0.5: erf(a) = a (c0 + s R(s)), s = a^2, R of degree 3; c0 = 2/sqrt(pi)
  as a float pair (hi + lo).
- 0.5 <= |x| < 4: 28 intervals of width 1/8 (the table's slots 4..31; a
  lane picks its slot with one permute per coefficient), each
  erf(c + t) = hi + lo + t P(t) around the interval's centre c, |t| <= 1/16,
  P of degree 3.
tanh: 0.5 <= |x| < 4.5 in 32 intervals of width 1/8, tanh(c + t) = hi + lo +
t P(t), P of degree 3 (below 0.5 and from 4.5 on, vec_math.h's formulas).
Every fit is a weighted least-squares fit on Chebyshev nodes, reweighted
towards minimax (Lawson), against mpmath at 30 digits; the coefficients are
rounded to float one at a time (lowest first) and the rest refitted, so the
error is that of the float coefficients actually used.
"""
import struct

import mpmath as mp

mp.mp.dps = 30


def f32(v):
    return struct.unpack("f", struct.pack("f", float(v)))[0]


def lsq(nodes, target, basis, weights):
    A = mp.matrix(len(nodes), len(basis))
    b = mp.matrix(len(nodes), 1)
    for i, t in enumerate(nodes):
        w = mp.sqrt(weights[i])
        for j, f in enumerate(basis):
            A[i, j] = f(t) * w
        b[i] = target(t) * w
    return mp.lu_solve(A.T * A, A.T * b)


def minimax(target, basis, lo, hi, scale, n=40, iters=12):
    nodes = [lo + (hi - lo) * (1 - mp.cos(mp.pi * (i + 0.5) / n)) / 2 for i in range(n)]
    w = [1 / scale(t) ** 2 for t in nodes]
    for _ in range(iters):
        c = lsq(nodes, target, basis, w)
        errs = [abs(sum(c[j] * f(t) for j, f in enumerate(basis)) - target(t)) / scale(t) for t in nodes]
        tot = sum(errs)
        w = [w[i] * errs[i] / tot * n for i in range(n)]
    return c


def fit_rounded(target, powers, lo, hi, scale):
    """Coefficients of sum c_k t^powers[k], rounded to float one at a time."""
    fixed = []
    for k in range(len(powers)):
        rest = powers[k:]

        def tgt(t, fixed=list(fixed)):
            return target(t) - sum(fixed[j] * t ** powers[j] for j in range(len(fixed)))

        co = minimax(tgt, [(lambda t, p=p: t ** p) for p in rest], lo, hi, scale)
        fixed.append(f32(co[0]))
    return fixed


def table(f, start, i):
    """hi, lo and P's coefficients of slot i: f(c + t), c the centre of
    [start + i/8, start + (i+1)/8)."""
    c = start + mp.mpf(2 * i + 1) / 16
    h = mp.mpf(1) / 16
    hi = f32(f(c))
    lo = f32(f(c) - hi)
    return hi, lo, fit_rounded(lambda t: f(c + t) - hi - lo, [1, 2, 3, 4], -h, h, lambda t: mp.mpf(1))


def arr(name, v):
    return "  alignas(64) static constexpr float %s[32] = {\n      %s};" % (
        name, ",\n      ".join(", ".join(repr(float(x)) + "f" for x in v[j:j + 4]) for j in range(0, 32, 4)))


def print_tables(slots):
    """The slots as `struct Cubic` (vec::table_cubic's parameter)."""
    cols = [[s[0] for s in slots], [s[1] for s in slots]] + [[s[2][k] for s in slots] for k in range(4)]
    print("struct Cubic {")
    for name, v in zip(["kHi", "kLo", "kP0", "kP1", "kP2", "kP3"], cols):
        print(arr(name, v))
    print("};")


def main():
    c0 = 2 / mp.sqrt(mp.pi)
    c0_hi = f32(c0)
    c0_lo = f32(c0 - c0_hi)

    def g(s):  # (erf(a) / a - c0) / s
        if s == 0:
            return -c0 / 3
        a = mp.sqrt(s)
        return (mp.erf(a) / a - c0) / s

    small = fit_rounded(g, [0, 1, 2, 3], mp.mpf(0), mp.mpf(0.25), lambda s: abs(g(s)))
    erf_slots = [(0.0, 0.0, [0.0] * 4)] * 4 + [table(mp.erf, mp.mpf(0), i) for i in range(4, 32)]
    tanh_slots = [table(mp.tanh, mp.mpf(0.5), i) for i in range(32)]

    print("// Written by tools/vmath/fit_tables.py: the coefficients of brisk's float32")
    print("// erf and tanh on AVX-512 (vec::erf_f32, vec::tanh_f32 in vec_math.h). Do not")
    print("// edit by hand.")
    print("#pragma once")
    print()
    print("namespace brisk::cpu::erf_table {")
    print()
    print("/// 2/sqrt(pi) = kC0Hi + kC0Lo, and R(s) (lowest first) for |x| < 0.5 (floats,")
    print("/// held as doubles for vec::poly).")
    print("inline constexpr float kC0Hi = %rf, kC0Lo = %rf;" % (c0_hi, c0_lo))
    print("inline constexpr double kSmall[4] = {%s};" % ", ".join(repr(x) for x in small))
    print("/// Slot i (4..31) covers [i/8, (i+1)/8): erf(c + t) = kHi + kLo + t (kP0 + t (kP1 + t (kP2 + t kP3))),")
    print("/// c = (2i + 1)/16. Slots 0..3 are unused (|x| < 0.5 takes the odd polynomial).")
    print_tables(erf_slots)
    print()
    print("}  // namespace brisk::cpu::erf_table")
    print()
    print("namespace brisk::cpu::tanh_table {")
    print()
    print("/// Slot i (0..31) covers [0.5 + i/8, 0.5 + (i+1)/8): tanh(c + t) = kHi + kLo + t (kP0 + t (kP1 + t (kP2 +")
    print("/// t kP3))), c = 0.5 + (2i + 1)/16.")
    print_tables(tanh_slots)
    print()
    print("}  // namespace brisk::cpu::tanh_table")


if __name__ == "__main__":
    main()
