#include "analysis/bocd.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <math.h> // lgamma_r: std::lgamma writes the global signgam, a data race in worker threads
#include <numbers>
#include <stdexcept>
#include <string>

namespace prism {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

void validate(const BocdParams& p)
{
    auto fail = [](const std::string& what) { throw std::invalid_argument("BOCD: " + what); };
    if (!(p.lambda > 1.0) || !std::isfinite(p.lambda))
        fail("lambda must be finite and > 1");
    if (!(p.kappa0 > 0.0) || !(p.alpha0 > 0.0) || !(p.beta0 > 0.0) || !std::isfinite(p.mu0)
        || !std::isfinite(p.kappa0) || !std::isfinite(p.alpha0) || !std::isfinite(p.beta0))
        fail("prior needs finite mu0 and kappa0, alpha0, beta0 > 0");
    if (!(p.pruneThreshold >= 0.0 && p.pruneThreshold < 1.0))
        fail("pruneThreshold must be in [0, 1)");
    if (!(p.cpThreshold >= 0.0 && p.cpThreshold <= 1.0))
        fail("cpThreshold must be in [0, 1]");
}

void checkFinite(std::span<const double> x)
{
    for (std::size_t i = 0; i < x.size(); ++i)
        if (!std::isfinite(x[i]))
            throw std::invalid_argument("BOCD: non-finite value at index " + std::to_string(i));
}

double logGammaPositive(double a)
{
    int sign = 0;
    return ::lgamma_r(a, &sign);
}

// --- Vector kernels -------------------------------------------------------------------------------------
// The per-run-length work (one log for the predictive, one exp for the normalisation, running maxima)
// dominates.
// It is written with GCC/Clang vector extensions, instantiated for the CPU's native width (AVX-512: 8
// doubles, AVX2 with FMA: 4, SSE2 or another baseline: 2) and picked once at run time. Every width walks the
// state in blocks of 8 from run length 0 and keeps one accumulator per block lane, with the same IEEE
// operations in the same order (the fused multiply-adds explicit, see fma(), no other contraction), so all
// machines give bit-identical results. log and exp are our own branch-free versions: a libm call cannot be
// vectorised without -ffast-math.

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#else
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif

constexpr std::size_t kBlock = 8;

std::size_t roundUp(std::size_t k) { return (k + kBlock - 1) / kBlock * kBlock; }

constexpr double kLn2Hi = 0x1.62e42fefa3800p-1; // ln 2 split so that k * kLn2Hi is exact
constexpr double kLn2Lo = 0x1.ef35793c76730p-45;
constexpr double kLn2By16Hi = 0x1.62e42fefa0000p-5; // ln 2 / 16 split so that k * hi is exact for |k| < 2^16
constexpr double kLn2By16Lo = 0x1.cf79abc9e3b3ap-44;
// 2^(i/16), i = 0..15
alignas(64) constexpr double kExp2Sixteenths[16] = {
    0x1.0000000000000p+0, 0x1.0b5586cf9890fp+0, 0x1.172b83c7d517bp+0, 0x1.2387a6e756238p+0,
    0x1.306fe0a31b715p+0, 0x1.3dea64c123422p+0, 0x1.4bfdad5362a27p+0, 0x1.5ab07dd485429p+0,
    0x1.6a09e667f3bcdp+0, 0x1.7a11473eb0187p+0, 0x1.8ace5422aa0dbp+0, 0x1.9c49182a3f090p+0,
    0x1.ae89f995ad3adp+0, 0x1.c199bdd85529cp+0, 0x1.d5818dcfba487p+0, 0x1.ea4afa2a490dap+0};

// An array of doubles whose first element is 64-byte aligned.
class AlignedArray {
public:
    void assign(std::size_t n, double fill)
    {
        m_raw.assign(n + kBlock, fill);
        const auto addr = reinterpret_cast<std::uintptr_t>(m_raw.data());
        m_data = m_raw.data() + ((64 - addr % 64) % 64) / sizeof(double);
    }
    double* data() { return m_data; }
    const double* data() const { return m_data; }
    double& operator[](std::size_t i) { return m_data[i]; }
    double operator[](std::size_t i) const { return m_data[i]; }

private:
    std::vector<double> m_raw;
    double* m_data = nullptr;
};

// Per-run-length tables: what depends only on the run length r (κ = κ0 + r, α = α0 + r/2).
struct Tables {
    std::size_t size = 0;
    AlignedArray logC;         // log Γ(α+½)/Γ(α) - ½ log(2π(κ+1)/κ): Student-t constant without the rate
    AlignedArray alpha;
    AlignedArray negAlphaHalf; // -(α + ½)
    AlignedArray shrink;       // κ / (2(κ+1)): the rate grows by shrink * (x - μ)²
    AlignedArray invKappa1;    // 1 / (κ+1): the mean moves by (x - μ) / (κ+1)
};

// Vector types by width (a vector_size that depends on a template parameter is not reliable in GCC).
template <std::size_t W>
struct VectorOf;
template <>
struct VectorOf<2> {
    typedef double D __attribute__((vector_size(16)));
    typedef std::uint64_t U __attribute__((vector_size(16)));
};
template <>
struct VectorOf<4> {
    typedef double D __attribute__((vector_size(32)));
    typedef std::uint64_t U __attribute__((vector_size(32)));
};
template <>
struct VectorOf<8> {
    typedef double D __attribute__((vector_size(64)));
    typedef std::uint64_t U __attribute__((vector_size(64)));
};

// One dimension's state, updated in place: position p holds the posterior of the run whose length is
// p - start (see FastBocd).
struct DimState {
    double* mu;
    double* beta;
    double* logBeta;
};
struct Prior {
    double mu, beta, logBeta;
};

template <std::size_t W>
struct Simd {
    using D = typename VectorOf<W>::D;
    using U = typename VectorOf<W>::U;
    static constexpr std::size_t kParts = kBlock / W;

    // Vectors go by reference: passed by value their ABI depends on the ISA, and these are always inlined.
    [[gnu::always_inline]] static void load(D& v, const double* p) { std::memcpy(&v, p, sizeof v); }

    // o = a * b + c with one rounding, lane by lane: the compiler makes it one FMA instruction (AVX2+FMA,
    // AVX-512); the baseline calls libm's fma (exact; the CPU's FMA when it has one), so every width gives the
    // same bits.
    [[gnu::always_inline]] static void fma(D& o, const D& a, const D& b, const D& c)
    {
        D v{};
        for (std::size_t l = 0; l < W; ++l)
            v[l] = __builtin_fma(a[l], b[l], c[l]);
        o = v;
    }
    [[gnu::always_inline]] static void store(double* p, const D& v) { std::memcpy(p, &v, sizeof v); }

    // log x for positive normal x (error ~1 ulp): x = 2^k z with z in [sqrt(1/2), sqrt(2)), and log z =
    // 2 atanh(s) = 2s + s R(s²), s = (z-1)/(z+1), |s| < 0.1716, with fdlibm's minimax R (error < 2^-58.45),
    // evaluated by Estrin's scheme (short chains).
    [[gnu::always_inline]] static void log(const D& x, D& out)
    {
        D k, s;
        logHead(x, k, s);
        logTail(k, s, out);
    }
    // The reduction: x = 2^k z, s = (z-1)/(z+1).
    [[gnu::always_inline]] static void logHead(const D& x, D& k, D& s)
    {
        const U bits = reinterpret_cast<U>(x);
        // bits(x) - bits(sqrt(1/2)) + (1023 << 52): its exponent field is the biased k
        const U tmp = bits + 0x00095f619980c433ULL;
        const U biasedK = tmp >> 52;
        const D z = reinterpret_cast<D>(bits - (tmp & 0xfff0000000000000ULL) + 0x3ff0000000000000ULL);
        // a small integer to double without an int64 conversion (none before AVX-512): 2^52 + k holds k
        k = reinterpret_cast<D>(biasedK | 0x4330000000000000ULL) - (0x1p52 + 1023.0);
        const D f = z - 1.0;
        s = f / (f + 2.0);
    }
    // The polynomial: log x = k ln 2 + 2s + s R(s²).
    [[gnu::always_inline]] static void logTail(const D& k, const D& s, D& out)
    {
        const D s2 = s * s;
        const D s4 = s2 * s2;
        const D s8 = s4 * s4;
        D a, b, c, ab, cd, r, lo;
        fma(a, s2, D{} + 0x1.999999997fa04p-2, D{} + 0x1.5555555555593p-1);
        fma(b, s2, D{} + 0x1.c71c51d8e78afp-3, D{} + 0x1.2492494229359p-2);
        fma(c, s2, D{} + 0x1.39a09d078c69fp-3, D{} + 0x1.7466496cb03dep-3);
        fma(ab, s4, b, a);
        fma(cd, s4, D{} + 0x1.2f112df3e5244p-3, c);
        fma(r, s8, cd, ab);
        r = s2 * r;
        fma(lo, s, r, k * kLn2Lo);
        fma(out, k, D{} + kLn2Hi, (s + s) + lo); // k ln2hi is exact
    }

    // 2^(i/16) for the low 4 bits i of each lane of idx: one permute with AVX-512, loads otherwise.
    [[gnu::always_inline]] static void exp2Sixteenths(const U& idx, D& out)
    {
        if constexpr (W == 8) {
            D lo, hi;
            load(lo, kExp2Sixteenths);
            load(hi, kExp2Sixteenths + 8);
            out = __builtin_shuffle(lo, hi, idx);
        } else {
            for (std::size_t l = 0; l < W; ++l)
                out[l] = kExp2Sixteenths[idx[l] & 15];
        }
    }

    // exp y (relative error ~3e-16) for y <= 709. Below -708 it gives e^-708, which is nothing next to a sum
    // whose largest term is not far below 1 (the only use). y = (k/16) ln2 + r, |r| <= ln2/32: e^y =
    // 2^(k div 16) 2^((k mod 16)/16) e^r, with the middle factor from a table and e^r = 1 + r + r² g(r), g a
    // degree-4 minimax polynomial (Chebyshev fit, error 6e-14 on g, i.e. < 3e-17 on e^r).
    [[gnu::always_inline]] static void exp(const D& y, D& out)
    {
        const D floor = D{} - 708.0;
        const D yc = y > floor ? y : floor; // one max
        constexpr double kRound = 0x1.8p52; // adding it rounds to an integer held in the low mantissa bits
        D kr, r, a, b, p;
        fma(kr, yc, D{} + 23.083120654223414, D{} + kRound); // 16 / ln 2
        const U kBits = reinterpret_cast<U>(kr);
        const D k = kr - kRound;
        fma(r, k, D{} - kLn2By16Hi, yc); // exact
        fma(r, k, D{} - kLn2By16Lo, r);
        const D r2 = r * r;
        fma(a, r, D{} + 0x1.55555554dd44dp-3, D{} + 0.5);
        fma(b, r, D{} + 0x1.11120af701debp-7, D{} + 0x1.55555555194d2p-5);
        fma(b, r2, D{} + 0x1.6c17bb51f236dp-10, b);
        fma(b, r2, b, a);
        fma(p, r2, b, 1.0 + r);
        D t;
        exp2Sixteenths(kBits, t);
        // (k div 16) into the exponent field; kBits holds 2^51 + k in its low bits, so the shifts keep
        // exactly the low 12 bits of floor(k / 16), and the addition wraps for negative k
        out = reinterpret_cast<D>(reinterpret_cast<U>(t * p) + ((kBits >> 4) << 52));
    }

    // Lane indices 0..W-1 plus `first`, as doubles (positions: exact far beyond any buffer).
    [[gnu::always_inline]] static void indices(D& v, double first)
    {
        if constexpr (W == 8)
            v = D{0, 1, 2, 3, 4, 5, 6, 7};
        else if constexpr (W == 4)
            v = D{0, 1, 2, 3};
        else
            v = D{0, 1};
        v += first;
    }

    // Stores [prev's last lane, cur's lanes 0..W-2]: the values of run lengths r..r+W-1 shifted to r+1..r+W, joined to
    // the previous vector's last one (one lane permute).
    [[gnu::always_inline]] static void storeShifted(double* p, const D& cur, const D& prev)
    {
        D v;
        if constexpr (W == 8)
            v = __builtin_shuffle(prev, cur, U{7, 8, 9, 10, 11, 12, 13, 14});
        else if constexpr (W == 4)
            v = __builtin_shuffle(prev, cur, U{3, 4, 5, 6});
        else
            v = __builtin_shuffle(prev, cur, U{1, 2});
        store(p, v);
    }

    // One dimension of the predictive at W run lengths r: the rate after x, β' = β + κ(x-μ)²/(2(κ+1)), its log
    // and the mean μ' = μ + (x-μ)/(κ+1), and the Student-t log density logC + α log β - (α+½) log β'. In two
    // halves, the first up to the division of the log (head) and the rest (tail), so that a pass can interleave
    // the head of the next run lengths with the tail of these: the division's latency then overlaps other work
    // instead of holding the scheduler.
    struct Head {
        D mu, beta, k, s;
    };
    [[gnu::always_inline]] static void head(std::size_t r, const DimState& st, const Tables& tab, const D& xv,
                                            Head& h)
    {
        D m, v, inv;
        load(m, st.mu + r);
        load(h.beta, st.beta + r);
        load(v, tab.shrink.data() + r);
        load(inv, tab.invKappa1.data() + r);
        const D diff = xv - m;
        fma(h.beta, v * diff, diff, h.beta);
        fma(h.mu, diff, inv, m);
        logHead(h.beta, h.k, h.s);
    }
    [[gnu::always_inline]] static void tail(std::size_t r, const DimState& st, const Tables& tab, const Head& h,
                                            D& lb, D& lp)
    {
        D lbOld, al, nalh, c;
        logTail(h.k, h.s, lb);
        load(lbOld, st.logBeta + r);
        load(al, tab.alpha.data() + r);
        load(nalh, tab.negAlphaHalf.data() + r);
        load(c, tab.logC.data() + r);
        fma(c, al, lbOld, c);
        fma(lp, nalh, lb, c);
    }

    // One dimension of the predictive over the run lengths [0, a1), into lp (added for d > 0), and the state
    // moved up by one run length: what was computed for r is stored at r + 1 (aligned stores, the lanes
    // shifted in registers), the prior goes to run length 0 and the last lane to a1. The tables and the state
    // are read one vector past a1 (readable; what is read there is not used).
    template <bool First>
    [[gnu::always_inline]] static void update(std::size_t a1, const DimState& s, const Tables& tab, double x,
                                              double* lpOut, const Prior& prior)
    {
        const D xv = D{} + x;
        D lp, lb, v;
        D pMu = D{} + prior.mu, pBeta = D{} + prior.beta, pLogBeta = D{} + prior.logBeta;
        Head h, next;
        head(0, s, tab, xv, h);
        for (std::size_t r = 0; r < a1; r += W) {
            head(r + W, s, tab, xv, next);
            tail(r, s, tab, h, lb, lp);
            storeShifted(s.mu + r, h.mu, pMu);
            storeShifted(s.beta + r, h.beta, pBeta);
            storeShifted(s.logBeta + r, lb, pLogBeta);
            pMu = h.mu;
            pBeta = h.beta;
            pLogBeta = lb;
            h = next;
            if constexpr (!First) {
                load(v, lpOut + r);
                lp = v + lp;
            }
            store(lpOut + r, lp);
        }
        storeShifted(s.mu + a1, pMu, pMu);
        storeShifted(s.beta + a1, pBeta, pBeta);
        storeShifted(s.logBeta + a1, pLogBeta, pLogBeta);
    }

    // Block lanes summed pairwise in a fixed order, whatever W is: lane l + 4 into lane l, then l + 2, then l + 1.
    [[gnu::always_inline]] static double total(const D (&sum)[kParts])
    {
        D v;
        if constexpr (W == 8) {
            v = sum[0] + __builtin_shuffle(sum[0], U{4, 5, 6, 7, 0, 1, 2, 3});
            v = v + __builtin_shuffle(v, U{2, 3, 0, 1, 6, 7, 4, 5});
            v = v + __builtin_shuffle(v, U{1, 0, 3, 2, 5, 4, 7, 6});
        } else if constexpr (W == 4) {
            v = sum[0] + sum[1];
            v = v + __builtin_shuffle(v, U{2, 3, 0, 1});
            v = v + __builtin_shuffle(v, U{1, 0, 3, 2});
        } else {
            v = (sum[0] + sum[2]) + (sum[1] + sum[3]);
            v = v + __builtin_shuffle(v, U{1, 0});
        }
        return v[0];
    }

    [[gnu::always_inline]] static double maxOf(const D (&parts)[kParts])
    {
        double m = kNegInf;
        for (const D& v : parts)
            for (std::size_t l = 0; l < W; ++l)
                m = std::max(m, v[l]);
        return m;
    }

    // Every lane of v set to the maximum (Max) or the minimum of its lanes, by halving shuffles.
    template <bool Max>
    [[gnu::always_inline]] static void reduce(D& v)
    {
        auto pick = [](D& x, const D& y) { x = Max ? (y > x ? y : x) : (y < x ? y : x); };
        if constexpr (W == 8) {
            pick(v, __builtin_shuffle(v, U{4, 5, 6, 7, 0, 1, 2, 3}));
            pick(v, __builtin_shuffle(v, U{2, 3, 0, 1, 6, 7, 4, 5}));
            pick(v, __builtin_shuffle(v, U{1, 0, 3, 2, 5, 4, 7, 6}));
        } else if constexpr (W == 4) {
            pick(v, __builtin_shuffle(v, U{2, 3, 0, 1}));
            pick(v, __builtin_shuffle(v, U{1, 0, 3, 2}));
        } else {
            pick(v, __builtin_shuffle(v, U{1, 0}));
        }
    }

    // The maximum over the block lanes and its position: the first one (First) or the last one among equal
    // maxima. Branch free (which lane wins is data, and unpredictable).
    template <bool First>
    [[gnu::always_inline]] static void argMax(const D (&mx)[kParts], const D (&at)[kParts], double& top,
                                              double& index)
    {
        D m = mx[0];
        for (std::size_t part = 1; part < kParts; ++part)
            m = mx[part] > m ? mx[part] : m;
        reduce<true>(m);
        const D none = D{} + (First ? std::numeric_limits<double>::infinity() : -1.0);
        D i = none;
        for (std::size_t part = 0; part < kParts; ++part) {
            const D c = mx[part] == m ? at[part] : none;
            i = (First ? c < i : c > i) ? c : i;
        }
        reduce<!First>(i);
        top = m[0];
        index = i[0];
    }

    struct JointArgs {
        std::size_t a1;      // whole blocks to walk, from run length 0
        double* stored;      // by run length: log P(r | x[..t-1]) - offset; replaced by the joint of r + 1
                             // (less the offset) at r + 1 (run length 0 is left for the caller)
        const double* lp;    // log predictive by run length
        double* weight;      // out: by run length r, exp(joint of r + 1 - offset - ref)
        double offset;       // see stored
        double ref;          // the exps are taken relative to this: an estimate of the maximum joint - offset
        const double* best;  // segmentation: ocp's scores by run length for the previous point, readable from -8
    };
    struct JointOut {
        double sum;           // Σ weight
        double top, topAt;    // max of joint - offset and the first run length r (of the previous point) with it
        double segTop, segAt; // with best: max of log P(r) + best (as stored + best, plus the offset) and its
                              // last run length
    };

    // One pass over the run lengths of one point: joint = log P(r) + lp, stored (less the offset) one run
    // length up; its maximum and first run length; the weights exp(joint - offset - ref) and their sum per block
    // lane. With `best` also ocp's segmentation maximum of the previous point.
    //
    // The stored values are not normalised (the offset is a scalar carried aside), so no pass rewrites them
    // after the sum: the previous point's normaliser enters only through run length 0 (written once per point)
    // and the estimate `ref`. The run lengths past the live ones hold -inf, their weights ~e^-708 (never read);
    // the block stored past the last one is -inf but for its first lane.
    template <bool Seg>
    [[gnu::always_inline]] static void joint(const JointArgs& a, JointOut& o)
    {
        double* __restrict stored = a.stored;
        const double* __restrict lpArr = a.lp;
        double* __restrict weight = a.weight;
        const double* __restrict best = a.best;
        D sum[kParts] = {};
        D mx[kParts], at[kParts], smx[kParts], sat[kParts];
        for (std::size_t part = 0; part < kParts; ++part) {
            mx[part] = D{} + kNegInf;
            at[part] = D{} + std::numeric_limits<double>::infinity();
            smx[part] = D{} + kNegInf;
            sat[part] = D{} - 1.0;
        }
        const D none = D{} + kNegInf;
        D pos, s, l, v, e, prev = none;
        indices(pos, 0.0);
        for (std::size_t block = 0; block < a.a1; block += kBlock)
            for (std::size_t part = 0; part < kParts; ++part) {
                const std::size_t r = block + part * W;
                load(l, lpArr + r);
                load(s, stored + r);
                const D j = s + l;
                storeShifted(stored + r, j, prev);
                prev = j;
                const auto better = j > mx[part];
                mx[part] = better ? j : mx[part];
                at[part] = better ? pos : at[part];
                exp(j - a.ref, e);
                store(weight + r, e);
                sum[part] += e;
                if constexpr (Seg) {
                    load(v, best + r);
                    const D sv = s + v;
                    const auto notWorse = sv >= smx[part];
                    smx[part] = notWorse ? sv : smx[part];
                    sat[part] = notWorse ? pos : sat[part];
                }
                pos += double(W);
            }
        storeShifted(stored + a.a1, none, prev);
        for (std::size_t part = 1; part < kParts; ++part)
            store(stored + a.a1 + part * W, none);
        o.sum = total(sum);
        argMax<true>(mx, at, o.top, o.topAt);
        if constexpr (Seg) {
            argMax<false>(smx, sat, o.segTop, o.segAt);
            o.segTop += a.offset;
        }
    }

    // v[r] = -inf from r = from to the end of the block that holds `to` - 1 (to > from), in whole aligned
    // vectors (a later load of the same vector then takes it from the store).
    [[gnu::always_inline]] static void padFrom(double* v, std::size_t from, std::size_t to)
    {
        std::size_t r = from / W * W;
        if (r < from) {
            D x, i;
            load(x, v + r);
            indices(i, double(r));
            x = i < double(from) ? x : D{} + kNegInf;
            store(v + r, x);
            r += W;
        }
        for (; r < roundUp(to); r += W)
            store(v + r, D{} + kNegInf);
    }

    // v[r] += add for r < a1 (finite values; -inf stays).
    [[gnu::always_inline]] static void addTo(std::size_t a1, double* v, double add)
    {
        D x;
        for (std::size_t p = 0; p < a1; p += W) {
            load(x, v + p);
            store(v + p, x + add);
        }
    }

    // weight[r] = exp(v[r] - ref) for r < a1 and their sum (the fallback when every weight underflowed
    // relative to the estimate, or one overflowed).
    [[gnu::always_inline]] static double weigh(std::size_t a1, const double* v, double* weight, double ref)
    {
        D sum[kParts] = {};
        D x, e;
        for (std::size_t block = 0; block < a1; block += kBlock)
            for (std::size_t part = 0; part < kParts; ++part) {
                load(x, v + block + part * W);
                exp(x - ref, e);
                store(weight + block + part * W, e);
                sum[part] += e;
            }
        return total(sum);
    }

    // max over r < k of x[r] + y[r]; x padded with -inf, y readable to a whole block.
    [[gnu::always_inline]] static double maxSum(std::size_t k, const double* x, const double* y)
    {
        D mx[kParts], vx, vy;
        for (D& v : mx)
            v = D{} + kNegInf;
        for (std::size_t block = 0; block < k; block += kBlock)
            for (std::size_t part = 0; part < kParts; ++part) {
                load(vx, x + block + part * W);
                load(vy, y + block + part * W);
                vx += vy;
                mx[part] = vx > mx[part] ? vx : mx[part];
            }
        return maxOf(mx);
    }
};

struct KernelSet {
    BocdResult (*runFast)(const std::vector<std::vector<double>>&, std::size_t, const BocdParams&);
    double (*maxSum)(std::size_t, const double*, const double*);
    int width;
};
const KernelSet& kernels();

// Everything computed from the posterior after each point: the MAP run length, the lagged change-point
// probabilities and ocp's most-probable-segmentation recursion. Shared by the fast and the exact path; the
// fast path finds the MAP run length and the segmentation maximum in its own passes.
class Recorder {
public:
    Recorder(std::size_t n, const BocdParams& p) : m_n(n), m_params(p)
    {
        m_result.cpProbability.assign(n, 0.0);
        m_result.startProbability.assign(n, 0.0);
        m_result.mapRunLength.assign(n, 0);
        if (p.segmentation) {
            // m_back[k]: start of the last segment of the best path scored in ocp's probmaxes[k+1]. Those
            // scores are kept reversed (m_revBest[kPad + m_n + 1 - k]) so that a scan over run lengths runs
            // forward (kPad spare entries before them).
            m_back.assign(n + 2, 0);
            // Reads reach kPad + (n - t) + r for r up to t + 1 + a block: at most kPad + n + 2 + 2 * kBlock.
            m_revBest.assign(kPad + n + 2 + 3 * kBlock, 0.0);
        }
    }

    // ocp's findCPprobs: the best path ending with a run of length r scores log P(r_t = r) + probmaxes at the
    // run's start k = t+1-r (with the reference's one-step shift). segmentationScores(t)[r] is that probmaxes
    // term, readable to a block past the live run lengths; nullptr without segmentation.
    static constexpr std::size_t kPad = kBlock;
    const double* segmentationScores(std::size_t t) const
    {
        return m_params.segmentation ? m_revBest.data() + kPad + (m_n - t) : nullptr;
    }
    // The best score after point t and the run length that gives it (ties: the longest run, i.e. the earliest
    // start, as R's which.max does).
    void recordSegmentation(std::size_t t, double value, std::size_t r)
    {
        m_revBest[kPad + m_n + 1 - (t + 2)] = value;
        m_back[t + 2] = t + 1 - r;
    }

    // After point t: `size` run lengths, the first arg-max `map` of log P(r), and prob(r) giving P(r) for
    // 0 < r < size.
    template <class Prob>
    [[gnu::always_inline]] void recordPoint(std::size_t t, std::size_t size, std::size_t map, Prob prob)
    {
        m_result.maxRunLengthsKept = std::max(m_result.maxRunLengthsKept, size);
        m_totalKept += size;
        m_result.mapRunLength[t] = map;
        // Point i is read once its window [i-w, i+w] has `lag` successors; the last points at the end.
        const std::size_t delay = m_params.lag + m_params.window;
        if (t >= delay + 1)
            readPoint(t - delay, t, size, prob);
        if (t + 1 == m_n)
            for (std::size_t i = t > delay ? t - delay + 1 : 1; i <= t; ++i)
                readPoint(i, t, size, prob);
    }

    // The exact path: everything from logR (log P(r) for r < size, padded with -inf to a whole block).
    void record(std::size_t t, const double* logR, std::size_t size)
    {
        m_zeros.resize(roundUp(size), 0.0);
        const double top = kernels().maxSum(size, logR, m_zeros.data());
        std::size_t map = 0;
        while (logR[map] != top) // the first maximum: the shorter run on ties
            ++map;
        recordPoint(t, size, map, [&](std::size_t r) { return std::exp(logR[r]); });
        if (const double* best = segmentationScores(t)) {
            const double value = kernels().maxSum(size, logR, best);
            std::size_t r = size - 1;
            while (logR[r] + best[r] != value)
                --r;
            recordSegmentation(t, value, r);
        }
    }

    BocdResult finish()
    {
        m_result.meanRunLengthsKept = m_n ? double(m_totalKept) / double(m_n) : 0.0;
        // One change per maximal run above the threshold, where the exact start is most probable.
        const auto& cp = m_result.cpProbability;
        const auto& start = m_result.startProbability;
        for (std::size_t i = 0; i < m_n;) {
            if (!(cp[i] > m_params.cpThreshold)) {
                ++i;
                continue;
            }
            std::size_t at = i;
            for (; i < m_n && cp[i] > m_params.cpThreshold; ++i)
                if (start[i] > start[at])
                    at = i;
            m_result.changePoints.push_back(at);
        }
        if (m_params.segmentation && m_n > 0) {
            // m_back[1] = 0: the series itself starts a segment.
            for (std::size_t k = m_n + 1;;) {
                const std::size_t s = m_back[k];
                m_result.segmentation.push_back(s);
                if (s == 0)
                    break;
                k = s;
            }
            std::reverse(m_result.segmentation.begin(), m_result.segmentation.end());
        }
        return std::move(m_result);
    }

private:
    // The segment starting at s holds x[s..t]: run length t - s + 1. Reads the starts s in [i-w, i+w] (not
    // the series start, not past t): run lengths rLo..rHi.
    template <class Prob>
    [[gnu::always_inline]] void readPoint(std::size_t i, std::size_t t, std::size_t size, Prob prob)
    {
        const std::size_t w = m_params.window;
        const std::size_t sLo = std::max<std::size_t>(1, i > w ? i - w : 0);
        const std::size_t sHi = std::min(i + w, t);
        const std::size_t rLo = t - sHi + 1;
        const std::size_t rHi = std::min(t - sLo + 1, size - 1); // rHi < rLo: all pruned
        const std::size_t rStart = t - i + 1;
        double sum = 0.0;
        for (std::size_t r = rLo; r <= rHi; ++r)
            sum += prob(r);
        m_result.cpProbability[i] = std::min(sum, 1.0);
        m_result.startProbability[i] = rStart <= rHi ? prob(rStart) : 0.0;
    }

    std::size_t m_n;
    BocdParams m_params;
    BocdResult m_result;
    std::vector<double> m_revBest;
    std::vector<double> m_zeros;
    std::vector<std::size_t> m_back;
    std::size_t m_totalKept = 0;
};

// The pruned recursion. After point t the kept run lengths r = 0..k-1 sit at index r of the state arrays
// (64-byte aligned, so every block of 8 run lengths is one cache line): posterior mean, rate and log rate per
// dimension, `stored` = log P(r) - offset (the point's joint, not normalised: the offset is one scalar, so no
// pass rewrites the stored values) and `weight`[r - 1] = P(r) / scale for r >= 1 (the exps of the
// normalisation, kept for pruning and the change-point read). Run length r becomes r + 1: each pass loads the
// blocks at r and stores what it computed one run length up, the lanes shifted in registers (the previous
// block's last lane joins in front; the prior, or for `stored` the new run length 0, at r = 0), so every load
// and store is aligned and a pass walks ceil(k/8) blocks. Pruning drops from the end; the run lengths past the
// live ones hold stored = -inf and finite state, so they count for nothing.
template <std::size_t W>
class FastBocd {
public:
    FastBocd(const BocdParams& p, std::size_t dims, Recorder& rec)
        : m_p(p), m_dims(dims), m_rec(rec), m_h(1.0 / p.lambda), m_logH(-std::log(p.lambda)),
          m_log1mH(std::log1p(-1.0 / p.lambda)), m_logBeta0(std::log(p.beta0)), m_dim(dims)
    {
        growTables(4 * kBlock);
        m_k = 1;
        grow();
        for (Dim& d : m_dim) {
            d.mu[0] = m_p.mu0;
            d.beta[0] = m_p.beta0;
            d.logBeta[0] = m_logBeta0;
        }
        m_stored[0] = 0.0; // before the first point the (empty) run has probability 1
    }

    // x: one value per dimension.
    [[gnu::always_inline]] void step(std::size_t t, const double* x)
    {
        const double* best = t > 0 ? m_rec.segmentationScores(t - 1) : nullptr;
        double pendTop = kNegInf, pendAt = -1.0; // segmentation of point t-1 over run lengths pruned now
        prune(best, pendTop, pendAt);
        const std::size_t k = m_k;
        if (roundUp(k) + 2 * kBlock > m_cap)
            grow();
        if (m_tab.size < k + 3 * kBlock)
            growTables(2 * (k + 3 * kBlock));
        const std::size_t a1 = roundUp(k);
        const Prior prior{m_p.mu0, m_p.beta0, m_logBeta0};
        Simd<W>::template update<true>(a1, state(0), m_tab, x[0], m_lp.data(), prior);
        for (std::size_t d = 1; d < m_dims; ++d)
            Simd<W>::template update<false>(a1, state(d), m_tab, x[d], m_lp.data(), prior);

        // The rate only grows from beta0, so log p(x | r) <= logC[r] - log(beta0) / 2 in each dimension: the
        // joint of a run length is at most its stored value plus lpBound.
        const double lpBound = double(m_dims) * (m_maxLogC[k - 1] - 0.5 * m_logBeta0);
        typename Simd<W>::JointArgs args{a1, m_stored.data(), m_lp.data(), m_weight.data(), m_offset,
                                         m_top + lpBound, best};
        typename Simd<W>::JointOut out{};
        if (best)
            Simd<W>::template joint<true>(args, out);
        else
            Simd<W>::template joint<false>(args, out);
        double ref = args.ref;
        double total = out.sum;
        if (best) {
            double segTop = out.segTop, segAt = out.segAt;
            // The pruned run lengths are the longest: they win ties.
            if (pendTop > segTop || (pendTop == segTop && pendAt > segAt)) {
                segTop = pendTop;
                segAt = pendAt;
            }
            m_rec.recordSegmentation(t - 1, segTop, std::size_t(segAt));
        }
        if (!(total > 1e-200 && total < std::numeric_limits<double>::infinity())) {
            // every weight underflowed (or one overflowed) relative to the estimate: redo relative to the maximum
            ref = out.top;
            total = Simd<W>::weigh(a1, m_stored.data() + 1, m_weight.data(), ref);
        }
        // log P(r+1 | x[..t]) = stored + offset: Σ exp(joint) = exp(old offset + ref) total, normalised to 1 - H.
        m_offset = m_log1mH - (ref + std::log(total));
        m_scale = (1.0 - m_h) / total;
        // The first arg-max of the joint carries over to run length + 1.
        const std::size_t map = out.top + m_offset > m_logH ? std::size_t(out.topAt) + 1 : 0;

        // the new run length 0: P(r = 0) = H exactly with a constant hazard
        m_stored[0] = m_logH - m_offset;
        m_top = std::max(out.top, m_stored[0]);
        ++m_k;
        if (std::abs(m_offset) > 64.0) { // keep the stored values near the normalised ones (precision)
            Simd<W>::addTo(roundUp(m_k), m_stored.data(), m_offset);
            m_top += m_offset;
            m_offset = 0.0;
        }
        m_rec.recordPoint(t, m_k, map, [this](std::size_t r) { return prob(r); });
    }

    // The segmentation of the last point (the others are found in the pass of the next point).
    void finish(std::size_t n)
    {
        const double* best = m_rec.segmentationScores(n - 1);
        if (!best || n == 0)
            return;
        double top = kNegInf;
        std::size_t at = 0;
        for (std::size_t r = 0; r < m_k; ++r) {
            const double v = logR(r) + best[r];
            if (v >= top) {
                top = v;
                at = r;
            }
        }
        m_rec.recordSegmentation(n - 1, top, at);
    }

private:
    struct Dim {
        AlignedArray mu, beta, logBeta;
    };

    DimState state(std::size_t d) { return {m_dim[d].mu.data(), m_dim[d].beta.data(), m_dim[d].logBeta.data()}; }

    // log P(r | x[..t]) after the last point, for a live run length r.
    [[gnu::always_inline]] double logR(std::size_t r) const { return m_stored[r] + m_offset; }

    // P(r | x[..t]) after the last point, for a live run length r >= 1.
    [[gnu::always_inline]] double prob(std::size_t r) const { return m_weight[r - 1] * m_scale; }

    // New, longer arrays (the live run lengths copied, the rest filled with neutral values).
    void grow()
    {
        const std::size_t cap = roundUp(4 * (m_k + 4 * kBlock));
        const std::size_t used = m_cap ? roundUp(m_k) + kBlock : 0;
        auto move = [&](AlignedArray& a, double fill) {
            AlignedArray b;
            b.assign(cap, fill);
            std::copy(a.data(), a.data() + used, b.data());
            a = std::move(b);
        };
        move(m_stored, kNegInf);
        move(m_weight, 0.0);
        for (Dim& d : m_dim) {
            move(d.mu, 0.0);
            move(d.beta, 1.0);
            move(d.logBeta, 0.0);
        }
        m_lp.assign(cap, 0.0);
        m_cap = cap;
    }

    // ocp's truncation: drop the longest run lengths while their summed probability (summed from the
    // longest down, in long double like R's cumsum) stays below the threshold, then apply the cap. With
    // `best`, the dropped run lengths' segmentation scores go to (top, at) first.
    [[gnu::always_inline]] void prune(const double* best, double& top, double& at)
    {
        std::size_t keep = m_k;
        if (keep <= 1)
            return;
        if (m_p.pruneThreshold > 0.0) {
            // Most points drop nothing: the longest run alone holds more than the threshold.
            long double tail = 0.0L;
            for (; keep > 1; --keep) {
                tail += prob(keep - 1);
                if (static_cast<double>(tail) >= m_p.pruneThreshold)
                    break;
            }
        }
        if (m_p.maxRunLength > 0)
            keep = std::min(keep, m_p.maxRunLength);
        if (keep == m_k)
            return;
        if (best)
            for (std::size_t r = keep; r < m_k; ++r) {
                const double v = logR(r) + best[r];
                if (v >= top) {
                    top = v;
                    at = double(r);
                }
            }
        // The passes run over whole blocks from run length 0: past the live run lengths stored must be -inf.
        Simd<W>::padFrom(m_stored.data(), keep, m_k);
        m_k = keep;
    }

    // Tables up to run length size - 1.
    void growTables(std::size_t size)
    {
        Tables tab;
        tab.size = size;
        tab.logC.assign(size, 0.0);
        tab.alpha.assign(size, 0.0);
        tab.negAlphaHalf.assign(size, 0.0);
        tab.shrink.assign(size, 0.0);
        tab.invKappa1.assign(size, 0.0);
        m_maxLogC.resize(size);
        for (std::size_t r = 0; r < size; ++r) {
            const double kappa = m_p.kappa0 + static_cast<double>(r);
            const double alpha = m_p.alpha0 + 0.5 * static_cast<double>(r);
            const double logC = logGammaPositive(alpha + 0.5) - logGammaPositive(alpha)
                                - 0.5 * std::log(2.0 * std::numbers::pi * (kappa + 1.0) / kappa);
            tab.logC[r] = logC;
            tab.alpha[r] = alpha;
            tab.negAlphaHalf[r] = -(alpha + 0.5);
            tab.shrink[r] = kappa / (2.0 * (kappa + 1.0));
            tab.invKappa1[r] = 1.0 / (kappa + 1.0);
            m_maxLogC[r] = r ? std::max(m_maxLogC[r - 1], logC) : logC;
        }
        m_tab = std::move(tab);
    }

    BocdParams m_p;
    std::size_t m_dims;
    Recorder& m_rec;
    double m_h;
    double m_logH;
    double m_log1mH;
    double m_logBeta0;
    std::vector<Dim> m_dim;
    AlignedArray m_stored, m_weight, m_lp;
    std::size_t m_cap = 0;
    std::size_t m_k = 0;     // live run lengths
    double m_offset = 0.0;   // log P(r) = stored + offset
    double m_scale = 0.0;    // P(r) = weight * scale for r >= 1
    double m_top = 0.0;      // max of stored (an estimate of where the next joint peaks)
    Tables m_tab;
    std::vector<double> m_maxLogC;
};

template <std::size_t W>
[[gnu::always_inline]] inline BocdResult runFastW(const std::vector<std::vector<double>>& columns, std::size_t n,
                                                  const BocdParams& p)
{
    const std::size_t dims = columns.size();
    Recorder rec(n, p);
    FastBocd<W> bocd(p, dims, rec);
    if (dims == 1) {
        const double* x = columns[0].data();
        for (std::size_t t = 0; t < n; ++t)
            bocd.step(t, x + t);
    } else {
        std::vector<double> point(dims);
        for (std::size_t t = 0; t < n; ++t) {
            for (std::size_t d = 0; d < dims; ++d)
                point[d] = columns[d][t];
            bocd.step(t, point.data());
        }
    }
    if (n)
        bocd.finish(n);
    return rec.finish();
}

using Columns = std::vector<std::vector<double>>;
BocdResult runFastBaseline(const Columns& c, std::size_t n, const BocdParams& p) { return runFastW<2>(c, n, p); }
double maxSumBaseline(std::size_t k, const double* x, const double* y) { return Simd<2>::maxSum(k, x, y); }

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PRISM_BOCD_X86 1
__attribute__((target("avx2,fma"))) BocdResult runFastAvx2(const Columns& c, std::size_t n, const BocdParams& p)
{
    return runFastW<4>(c, n, p);
}
__attribute__((target("avx2,fma"))) double maxSumAvx2(std::size_t k, const double* x, const double* y)
{
    return Simd<4>::maxSum(k, x, y);
}
__attribute__((target("avx512f"))) BocdResult runFastAvx512(const Columns& c, std::size_t n, const BocdParams& p)
{
    return runFastW<8>(c, n, p);
}
__attribute__((target("avx512f"))) double maxSumAvx512(std::size_t k, const double* x, const double* y)
{
    return Simd<8>::maxSum(k, x, y);
}
#endif

const KernelSet kBaseline{runFastBaseline, maxSumBaseline, 2};
#ifdef PRISM_BOCD_X86
const KernelSet kAvx2{runFastAvx2, maxSumAvx2, 4};
const KernelSet kAvx512{runFastAvx512, maxSumAvx512, 8};
#endif

const KernelSet* bestKernels()
{
#ifdef PRISM_BOCD_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return &kAvx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return &kAvx2;
#endif
    return &kBaseline;
}

const KernelSet* g_forced = nullptr; // setBocdKernelWidth

const KernelSet& kernels()
{
    static const KernelSet* best = bestKernels();
    return g_forced ? *g_forced : *best;
}

BocdResult runFast(const Columns& columns, std::size_t n, const BocdParams& p)
{
    return kernels().runFast(columns, n, p);
}

#if !defined(__clang__)
#pragma GCC pop_options
#endif

std::vector<double> prepared(std::span<const double> x, const BocdParams& p)
{
    checkFinite(x);
    if (p.standardize)
        return zscore(x);
    // The model squares deviations: beyond this they overflow (z-scored data never comes close).
    for (std::size_t i = 0; i < x.size(); ++i)
        if (std::abs(x[i] - p.mu0) > 1e150)
            throw std::invalid_argument("BOCD: |value - mu0| > 1e150 at index " + std::to_string(i)
                                        + " (use standardize)");
    return {x.begin(), x.end()};
}

} // namespace

std::vector<double> zscore(std::span<const double> x)
{
    const std::size_t n = x.size();
    std::vector<double> out(x.begin(), x.end());
    if (n == 0)
        return out;
    // R: colMeans (long double sum / n), sweep, then sqrt(sum(v^2) / max(1, n-1)) with a long double sum.
    long double sum = 0.0L;
    for (double v : x)
        sum += v;
    const double mean = static_cast<double>(sum / static_cast<long double>(n));
    long double squares = 0.0L;
    for (double& v : out) {
        v -= mean;
        squares += v * v;
    }
    const double sd = std::sqrt(static_cast<double>(squares) / static_cast<double>(std::max<std::size_t>(1, n - 1)));
    if (sd > 0.0) // R divides by 0 too (NaN, and ocp fails); an infinite sd gives zeros, as in R
        for (double& v : out)
            v /= sd;
    return out;
}

int bocdKernelWidth() { return kernels().width; }

bool setBocdKernelWidth(int width)
{
    const KernelSet* best = bestKernels();
    if (width == 0) {
        g_forced = nullptr;
        return true;
    }
    if (width > best->width)
        return false;
    switch (width) {
    case 2: g_forced = &kBaseline; return true;
#ifdef PRISM_BOCD_X86
    case 4: g_forced = &kAvx2; return true;
    case 8: g_forced = &kAvx512; return true;
#endif
    default: return false;
    }
}

BocdResult runBocd(std::span<const double> x, const BocdParams& p)
{
    validate(p);
    std::vector<std::vector<double>> columns{prepared(x, p)};
    return runFast(columns, x.size(), p);
}

BocdResult runBocdMultivariate(std::span<const std::vector<double>> columns, const BocdParams& p)
{
    validate(p);
    if (columns.empty())
        throw std::invalid_argument("BOCD: no dimensions");
    const std::size_t n = columns.front().size();
    std::vector<std::vector<double>> prep;
    for (const auto& c : columns) {
        if (c.size() != n)
            throw std::invalid_argument("BOCD: dimensions of different lengths");
        prep.push_back(prepared(c, p));
    }
    return runFast(prep, n, p);
}

BocdResult runBocdExact(std::span<const double> x, const BocdParams& p)
{
    validate(p);
    const std::vector<double> data = prepared(x, p);
    const std::size_t n = data.size();
    Recorder rec(n, p);
    const double logH = std::log(1.0 / p.lambda);
    const double log1mH = std::log(1.0 - 1.0 / p.lambda);

    // Indexed by the start s of the current segment (s = t+1 is the empty run, r = 0): the number of points,
    // their mean and sum of squared deviations (Welford), and log P(segment started at s | x[0..t]).
    std::vector<double> count{0.0}, mean{0.0}, m2{0.0}, logP{0.0};
    std::vector<double> logR;
    for (std::size_t t = 0; t < n; ++t) {
        const double xt = data[t];
        std::vector<double> joint(logP.size());
        for (std::size_t s = 0; s < logP.size(); ++s) {
            // Normal-Gamma posterior from the sufficient statistics, then its Student-t predictive.
            const double m = count[s];
            const double kappa = p.kappa0 + m;
            const double mu = (p.kappa0 * p.mu0 + m * mean[s]) / kappa;
            const double alpha = p.alpha0 + m / 2.0;
            const double beta = p.beta0 + 0.5 * m2[s]
                                + p.kappa0 * m * (mean[s] - p.mu0) * (mean[s] - p.mu0) / (2.0 * kappa);
            const double nu = 2.0 * alpha;
            const double scale2 = beta * (kappa + 1.0) / (alpha * kappa);
            const double z2 = (xt - mu) * (xt - mu) / (nu * scale2);
            const double logPred = logGammaPositive((nu + 1.0) / 2.0) - logGammaPositive(nu / 2.0)
                                   - 0.5 * std::log(nu * std::numbers::pi * scale2) - (nu + 1.0) / 2.0 * std::log1p(z2);
            joint[s] = logP[s] + logPred;
            count[s] = m + 1.0;
            const double delta = xt - mean[s];
            mean[s] += delta / count[s];
            m2[s] += delta * (xt - mean[s]);
        }
        double mx = kNegInf;
        for (double j : joint)
            mx = std::max(mx, j);
        double sum = 0.0;
        for (double j : joint)
            sum += std::exp(j - mx);
        const double logZ = mx + std::log(sum);
        // Every existing segment continues with 1 - H; a new (empty) one starts after t with H.
        for (std::size_t s = 0; s < logP.size(); ++s)
            logP[s] = joint[s] + log1mH - logZ;
        count.push_back(0.0);
        mean.push_back(0.0);
        m2.push_back(0.0);
        logP.push_back(logH);

        // Start s holds t - s + 1 points: run length r = t + 1 - s.
        logR.assign(roundUp(t + 2) + kBlock, kNegInf);
        for (std::size_t s = 0; s <= t + 1; ++s)
            logR[t + 1 - s] = logP[s];
        rec.record(t, logR.data(), t + 2);
    }
    return rec.finish();
}

} // namespace prism
