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
// doubles, AVX2: 4, SSE2 or another baseline: 2) and picked once at run time. Every width walks the state
// in blocks of 8 at positions aligned to 8 and keeps one accumulator per block lane, with the same IEEE
// operations in the same order and no FMA contraction, so all machines give bit-identical results. log and
// exp are our own branch-free versions: a libm call cannot be vectorised without -ffast-math.

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#else
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif

constexpr std::size_t kBlock = 8;

std::size_t roundUp(std::size_t k) { return (k + kBlock - 1) / kBlock * kBlock; }
std::size_t roundDown(std::size_t k) { return k / kBlock * kBlock; }

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

// Per-run-length tables: what depends only on the run length r (κ = κ0 + r, α = α0 + r/2). Each is stored
// from r = -kBlock: the lanes before a window's first run length (positions below it in its first aligned
// block) read neutral values there (no update, a finite density).
struct Tables {
    std::vector<double> logC;      // log Γ(α+½)/Γ(α) - ½ log(2π(κ+1)/κ): Student-t constant without the rate
    std::vector<double> alpha;
    std::vector<double> shrink;    // κ / (2(κ+1)): the rate grows by shrink * (x - μ)²
    std::vector<double> invKappa1; // 1 / (κ+1): the mean moves by (x - μ) / (κ+1)
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

template <std::size_t W>
struct Simd {
    using D = typename VectorOf<W>::D;
    using U = typename VectorOf<W>::U;
    static constexpr std::size_t kParts = kBlock / W;

    // Vectors go by reference: passed by value their ABI depends on the ISA, and these are always inlined.
    [[gnu::always_inline]] static void load(D& v, const double* p) { std::memcpy(&v, p, sizeof v); }
    [[gnu::always_inline]] static void store(double* p, const D& v) { std::memcpy(p, &v, sizeof v); }

    // log x for positive normal x (error ~1 ulp): x = 2^k z with z in [sqrt(1/2), sqrt(2)), and log z =
    // 2 atanh(s) = 2s + s R(s²), s = (z-1)/(z+1), |s| < 0.1716, with fdlibm's minimax R (error < 2^-58.45),
    // evaluated by Estrin's scheme (short chains).
    [[gnu::always_inline]] static void log(const D& x, D& out)
    {
        const U bits = reinterpret_cast<U>(x);
        // bits(x) - bits(sqrt(1/2)) + (1023 << 52): its exponent field is the biased k
        const U tmp = bits + 0x00095f619980c433ULL;
        const U biasedK = tmp >> 52;
        const D z = reinterpret_cast<D>(bits - (tmp & 0xfff0000000000000ULL) + 0x3ff0000000000000ULL);
        // a small integer to double without an int64 conversion (none before AVX-512): 2^52 + k holds k
        const D k = reinterpret_cast<D>(biasedK | 0x4330000000000000ULL) - (0x1p52 + 1023.0);
        const D f = z - 1.0;
        const D s = f / (f + 2.0);
        const D s2 = s * s;
        const D s4 = s2 * s2;
        const D s8 = s4 * s4;
        const D a = 0x1.5555555555593p-1 + s2 * 0x1.999999997fa04p-2;
        const D b = 0x1.2492494229359p-2 + s2 * 0x1.c71c51d8e78afp-3;
        const D c = 0x1.7466496cb03dep-3 + s2 * 0x1.39a09d078c69fp-3;
        const D r = s2 * ((a + s4 * b) + s8 * (c + s4 * 0x1.2f112df3e5244p-3));
        out = k * kLn2Hi + ((s + s) + (s * r + k * kLn2Lo));
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

    // exp y (relative error ~2e-16) for y <= 709; exactly 0 below -708 (negligible next to the largest term,
    // which is 1). y = (k/16) ln2 + r, |r| <= ln2/32: e^y = 2^(k div 16) 2^((k mod 16)/16) e^r, with the middle
    // factor from a table and e^r by its Taylor series to r^7.
    [[gnu::always_inline]] static void exp(const D& y, D& out)
    {
        const auto tiny = y < -708.0;
        const D yc = tiny ? D{} - 708.0 : y;
        constexpr double kRound = 0x1.8p52; // adding it rounds to an integer held in the low mantissa bits
        const D kr = yc * 23.083120654223414 + kRound; // 16 / ln 2
        const U kBits = reinterpret_cast<U>(kr);
        const D k = kr - kRound;
        const D r = (yc - k * kLn2By16Hi) - k * kLn2By16Lo;
        const D r2 = r * r;
        const D r4 = r2 * r2;
        const D q0 = (1.0 + r) + r2 * (0.5 + r * (1.0 / 6));
        const D q1 = (1.0 / 24 + r * (1.0 / 120)) + r2 * (1.0 / 720 + r * (1.0 / 5040));
        const D p = q0 + r4 * q1;
        D t;
        exp2Sixteenths(kBits, t);
        // (k div 16) into the exponent field; kBits holds 2^51 + k in its low bits, so the shifts keep
        // exactly the low 12 bits of floor(k / 16), and the addition wraps for negative k
        const D e = reinterpret_cast<D>(reinterpret_cast<U>(t * p) + ((kBits >> 4) << 52));
        out = tiny ? D{} : e;
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

    // Dimension d of the predictive over the aligned blocks [a0, a1): per position p (run length r = p -
    // start), the rate after x: β' = β + κ(x-μ)²/(2(κ+1)), its log, the mean μ' = μ + (x-μ)/(κ+1), all in
    // place; and the Student-t log density logC + α log β - (α+½) log β' into lp (added for d > 0).
    template <bool First>
    [[gnu::always_inline]] static void update(std::size_t a0, std::size_t a1, std::size_t start, const DimState& s,
                                              const Tables& tab, double x, double* lpOut)
    {
        double* __restrict mu = s.mu;
        double* __restrict beta = s.beta;
        double* __restrict logBeta = s.logBeta;
        double* __restrict lpArr = lpOut;
        // Table index of position p: p - start + kBlock (>= 1 from the block holding start).
        const double* __restrict shrink = tab.shrink.data() + kBlock;
        const double* __restrict alpha = tab.alpha.data() + kBlock;
        const double* __restrict logC = tab.logC.data() + kBlock;
        const double* __restrict invKappa1 = tab.invKappa1.data() + kBlock;
        const D xv = D{} + x;
        D m, b, lb, lbOld, al, c, v, inv, lp;
        for (std::size_t p = a0; p < a1; p += W) {
            const std::ptrdiff_t r = std::ptrdiff_t(p) - std::ptrdiff_t(start);
            load(m, mu + p);
            load(b, beta + p);
            load(v, shrink + r);
            const D diff = xv - m;
            b = b + v * diff * diff;
            log(b, lb);
            load(inv, invKappa1 + r);
            load(lbOld, logBeta + p);
            load(al, alpha + r);
            load(c, logC + r);
            lp = c + al * lbOld - (al + 0.5) * lb;
            if constexpr (!First) {
                load(v, lpArr + p);
                lp = v + lp;
            }
            store(lpArr + p, lp);
            store(mu + p, m + diff * inv);
            store(beta + p, b);
            store(logBeta + p, lb);
        }
    }

    // Block lanes summed pairwise in a fixed order, whatever W is.
    [[gnu::always_inline]] static double total(const D (&sum)[kParts])
    {
        double lane[kBlock];
        std::memcpy(lane, sum, sizeof lane);
        for (std::size_t width = kBlock / 2; width > 0; width /= 2)
            for (std::size_t l = 0; l < width; ++l)
                lane[l] += lane[l + width];
        return lane[0];
    }

    [[gnu::always_inline]] static double maxOf(const D (&parts)[kParts])
    {
        double m = kNegInf;
        for (const D& v : parts)
            for (std::size_t l = 0; l < W; ++l)
                m = std::max(m, v[l]);
        return m;
    }

    // The maximum over the lanes and its index: the first one (First) or the last one among equal maxima.
    template <bool First>
    [[gnu::always_inline]] static void argMax(const D (&mx)[kParts], const D (&at)[kParts], double& top,
                                              double& index)
    {
        top = kNegInf;
        index = First ? std::numeric_limits<double>::infinity() : -1.0;
        for (std::size_t part = 0; part < kParts; ++part)
            for (std::size_t l = 0; l < W; ++l) {
                const double v = mx[part][l], i = at[part][l];
                if (v > top || (v == top && (First ? i < index : i > index))) {
                    top = v;
                    index = i;
                }
            }
    }

    struct JointArgs {
        std::size_t a0, a1;  // aligned blocks to walk
        std::size_t start;   // position of run length 0
        double* stored;      // per position r >= 1: log P(r | x[..t-1]) - offset; replaced by the joint - offset
        const double* lp;    // log predictive per position
        double offset;       // see stored
        double logR0;        // log P(r = 0 | x[..t-1])
        double ref;          // the exps are taken relative to this: an estimate of the maximum joint - offset
        const double* best;  // segmentation: ocp's scores by run length for the previous point, readable from -8
    };
    struct JointOut {
        double sum;          // Σ exp(joint - offset - ref) over r >= 1 (run length 0 is the caller's)
        double topRest;      // max of joint - offset over r >= 1
        double top, topAt;   // max of joint - offset over all r and its first position
        double segTop, segAt; // with best: max of log P(r) + best and its last position
    };

    // One pass over the positions of one point: joint = log P(r) + lp, stored (less the offset) in place; its
    // maximum and first position; Σ exp(joint - offset - ref) per block lane. With `best` also ocp's
    // segmentation maximum of the previous point.
    //
    // The stored values are not normalised (the offset is a scalar carried aside), so the pass needs nothing
    // from the previous point's normalisation: run length 0, the only value that depends on it, is blended in
    // and summed by the caller. Points thus do not wait on each other's normaliser (a log of a sum over the
    // whole pass), and consecutive points overlap in the core.
    template <bool Seg>
    [[gnu::always_inline]] static void joint(const JointArgs& a, JointOut& o)
    {
        double* __restrict stored = a.stored;
        const double* __restrict lpArr = a.lp;
        const double* __restrict best = a.best;
        D sum[kParts] = {};
        D rest[kParts], mx[kParts], at[kParts], smx[kParts], sat[kParts];
        for (std::size_t part = 0; part < kParts; ++part) {
            rest[part] = D{} + kNegInf;
            mx[part] = D{} + kNegInf;
            at[part] = D{} + std::numeric_limits<double>::infinity();
            smx[part] = D{} + kNegInf;
            sat[part] = D{} - 1.0;
        }
        const D startV = D{} + double(a.start);
        const D zero = D{} + (a.logR0 - a.offset); // run length 0, less the offset
        const D negInf = D{} + kNegInf;
        D pos, s, l, v, e;
        indices(pos, double(a.a0));
        for (std::size_t block = a.a0; block < a.a1; block += kBlock)
            for (std::size_t part = 0; part < kParts; ++part) {
                const std::size_t p = block + part * W;
                const auto isZero = pos == startV;
                load(s, stored + p);
                s = isZero ? negInf : s; // what is stored at run length 0 is stale
                load(l, lpArr + p);
                const D j = s + l;
                rest[part] = j > rest[part] ? j : rest[part];
                exp(j - a.ref, e);
                sum[part] += e;
                const D jAll = isZero ? zero + l : j;
                store(stored + p, jAll);
                const auto better = jAll > mx[part];
                mx[part] = better ? jAll : mx[part];
                at[part] = better ? pos : at[part];
                if constexpr (Seg) {
                    load(v, best + (std::ptrdiff_t(p) - std::ptrdiff_t(a.start)));
                    const D sv = (isZero ? D{} + a.logR0 : s + a.offset) + v;
                    const auto notWorse = sv >= smx[part];
                    smx[part] = notWorse ? sv : smx[part];
                    sat[part] = notWorse ? pos : sat[part];
                }
                pos += double(W);
            }
        o.sum = total(sum);
        o.topRest = maxOf(rest);
        argMax<true>(mx, at, o.top, o.topAt);
        if constexpr (Seg)
            argMax<false>(smx, sat, o.segTop, o.segAt);
    }

    // v[p] = -inf for p from `from` to the end of its aligned block (a whole-vector store).
    [[gnu::always_inline]] static void padFrom(double* v, std::size_t from)
    {
        const std::size_t block = roundDown(from);
        if (block == from)
            return;
        D pos, x;
        indices(pos, double(block));
        for (std::size_t part = 0; part < kParts; ++part) {
            load(x, v + block + part * W);
            x = pos >= double(from) ? D{} + kNegInf : x;
            store(v + block + part * W, x);
            pos += double(W);
        }
    }

    // v += add over the positions (finite values; -inf stays).
    [[gnu::always_inline]] static void addTo(std::size_t a0, std::size_t a1, double* v, double add)
    {
        D x;
        for (std::size_t p = a0; p < a1; p += W) {
            load(x, v + p);
            store(v + p, x + add);
        }
    }

    // exp of one value, as the vector kernel computes it (bit-identical on every width).
    [[gnu::always_inline]] static double exp1(double y)
    {
        D v = D{} + y, e;
        exp(v, e);
        return e[0];
    }

    // Σ exp(v - ref) over the same positions (the fallback when every term underflowed relative to the bound).
    [[gnu::always_inline]] static double expSum(std::size_t a0, std::size_t a1, const double* v, double ref)
    {
        D sum[kParts] = {};
        D x, e;
        for (std::size_t block = a0; block < a1; block += kBlock)
            for (std::size_t part = 0; part < kParts; ++part) {
                load(x, v + block + part * W);
                exp(x - ref, e);
                sum[part] += e;
            }
        return total(sum);
    }

    // out[l] = exp(in[l]) for one block.
    [[gnu::always_inline]] static void expBlock(const double* in, double* out)
    {
        D v, e;
        for (std::size_t part = 0; part < kParts; ++part) {
            load(v, in + part * W);
            exp(v, e);
            store(out + part * W, e);
        }
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
    void (*expBlock)(const double*, double*);
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
            // forward; kPad entries before them let the fast path read a block before run length 0.
            m_back.assign(n + 2, 0);
            // Reads reach kPad + (n - t) + r for r up to t + 1 + a block: at most kPad + n + 2 + 2 * kBlock.
            m_revBest.assign(kPad + n + 2 + 3 * kBlock, 0.0);
        }
    }

    // ocp's findCPprobs: the best path ending with a run of length r scores log P(r_t = r) + probmaxes at the
    // run's start k = t+1-r (with the reference's one-step shift). segmentationScores(t)[r] is that probmaxes
    // term, readable from r = -kBlock to a block past the live run lengths; nullptr without segmentation.
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

    // After point t: `size` run lengths, the first arg-max `map` of log P(r), and expAt(r, out) giving
    // exp(log P(r + i)) for i < kBlock (0 at r + i >= size).
    template <class ExpAt>
    [[gnu::always_inline]] void recordPoint(std::size_t t, std::size_t size, std::size_t map, ExpAt expAt)
    {
        m_result.maxRunLengthsKept = std::max(m_result.maxRunLengthsKept, size);
        m_totalKept += size;
        m_result.mapRunLength[t] = map;
        // Point i is read once its window [i-w, i+w] has `lag` successors; the last points at the end.
        const std::size_t delay = m_params.lag + m_params.window;
        if (t >= delay + 1)
            readPoint(t - delay, t, size, expAt);
        if (t + 1 == m_n)
            for (std::size_t i = t > delay ? t - delay + 1 : 1; i <= t; ++i)
                readPoint(i, t, size, expAt);
    }

    // The exact path: everything from logR (log P(r) for r < size, padded with -inf to a whole block).
    void record(std::size_t t, const double* logR, std::size_t size)
    {
        m_zeros.resize(roundUp(size), 0.0);
        const double top = kernels().maxSum(size, logR, m_zeros.data());
        std::size_t map = 0;
        while (logR[map] != top) // the first maximum: the shorter run on ties
            ++map;
        recordPoint(t, size, map, [&](std::size_t r, double* out) { kernels().expBlock(logR + r, out); });
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
    // the series start, not past t): run lengths rLo..rHi, contiguous, exponentiated a block at a time.
    template <class ExpAt>
    [[gnu::always_inline]] void readPoint(std::size_t i, std::size_t t, std::size_t size, ExpAt expAt)
    {
        const std::size_t w = m_params.window;
        const std::size_t sLo = std::max<std::size_t>(1, i > w ? i - w : 0);
        const std::size_t sHi = std::min(i + w, t);
        const std::size_t rLo = t - sHi + 1;
        const std::size_t rHi = std::min(t - sLo + 1, size - 1); // rHi < rLo: all pruned
        double sum = 0.0, start = 0.0;
        double e[kBlock];
        for (std::size_t b = rLo; b <= rHi; b += kBlock) {
            expAt(b, e);
            for (std::size_t r = b; r <= std::min(rHi, b + kBlock - 1); ++r) {
                sum += e[r - b];
                if (r == t - i + 1)
                    start = e[r - b];
            }
        }
        m_result.cpProbability[i] = std::min(sum, 1.0);
        m_result.startProbability[i] = start;
    }

    std::size_t m_n;
    BocdParams m_params;
    BocdResult m_result;
    std::vector<double> m_revBest;
    std::vector<double> m_zeros;
    std::vector<std::size_t> m_back;
    std::size_t m_totalKept = 0;
};

// An array of doubles whose first element is 64-byte aligned (one AVX-512 vector per cache line).
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

// The pruned recursion. After point t the kept run lengths r = 0..k-1 sit at consecutive positions start +
// r of the state arrays: posterior mean, rate and log rate per dimension, and `stored` = log P(r) - offset
// for r >= 1 (the point's joint, not normalised: the offset is one scalar, so no pass rewrites the stored
// values and the next point's passes need nothing from this point's normaliser). Run length r becomes
// r + 1 at the same position, so the state is updated in place and never shifted; the new run length 0
// takes the position before, and pruning drops from the end. The window thus walks down the arrays by one
// position per point and is moved back up when it reaches the bottom (rarely: the arrays are a few times
// longer than the window). Passes run over whole blocks at positions aligned to 8; the positions of those
// blocks outside the window have stored = -inf and finite state, so they count for nothing.
template <std::size_t W>
class FastBocd {
public:
    FastBocd(const BocdParams& p, std::size_t dims, Recorder& rec)
        : m_p(p), m_dims(dims), m_rec(rec), m_logH(-std::log(p.lambda)), m_log1mH(std::log1p(-1.0 / p.lambda)),
          m_logBeta0(std::log(p.beta0)), m_logPrune(p.pruneThreshold > 0 ? std::log(p.pruneThreshold) : kNegInf),
          m_dim(dims)
    {
        growTables(4 * kBlock);
        m_k = 1;
        relocate(); // sets up the arrays with the window at the top
        setPrior(m_start);
        m_logR0 = 0.0; // before the first point the (empty) run has probability 1
    }

    // x: one value per dimension.
    [[gnu::always_inline]] void step(std::size_t t, const double* x)
    {
        if (m_start <= kBlock)
            relocate();
        const double* best = t > 0 ? m_rec.segmentationScores(t - 1) : nullptr;
        double pendTop = kNegInf, pendAt = -1.0; // segmentation of point t-1 over run lengths pruned now
        prune(best, pendTop, pendAt);
        const std::size_t k = m_k;
        if (m_tab.logC.size() < k + 3 * kBlock)
            growTables(2 * (k + 3 * kBlock));
        const std::size_t a0 = roundDown(m_start), a1 = roundUp(m_start + k);
        Simd<W>::template update<true>(a0, a1, m_start, state(0), m_tab, x[0], m_lp.data());
        for (std::size_t d = 1; d < m_dims; ++d)
            Simd<W>::template update<false>(a0, a1, m_start, state(d), m_tab, x[d], m_lp.data());
        setPrior(m_start - 1); // the next run length 0, written well before the next pass reads it

        // The rate only grows from beta0, so log p(x | r) <= logC[r] - log(beta0) / 2 in each dimension: the
        // joint of a run length is at most its stored value plus lpBound.
        const double lpBound = double(m_dims) * (m_maxLogC[k - 1] - 0.5 * m_logBeta0);
        const double zero = m_logR0 - m_offset; // run length 0, less the offset
        typename Simd<W>::JointArgs args{a0, a1, m_start, m_stored.data(), m_lp.data(), m_offset, m_logR0,
                                         (m_topRest > kNegInf ? m_topRest : zero) + lpBound, nullptr};
        typename Simd<W>::JointOut out{};
        if (best) {
            args.best = best;
            Simd<W>::template joint<true>(args, out);
            // The pruned run lengths are the longest: they win ties.
            double segTop = out.segTop, segAt = out.segAt - double(m_start);
            if (pendTop > segTop || (pendTop == segTop && pendAt > segAt)) {
                segTop = pendTop;
                segAt = pendAt;
            }
            m_rec.recordSegmentation(t - 1, segTop, std::size_t(segAt));
        } else {
            Simd<W>::template joint<false>(args, out);
        }
        double ref = args.ref;
        double total = out.sum + Simd<W>::exp1(zero + m_lp[m_start] - ref);
        if (!(total > 1e-290 && total < std::numeric_limits<double>::infinity())) {
            // every term underflowed (or one overflowed) relative to the estimate: redo relative to the maximum
            ref = out.top;
            total = Simd<W>::expSum(a0, a1, m_stored.data(), ref);
        }
        // log P(r+1 | x[..t]) = stored + offset: Σ exp(joint) = exp(old offset + ref) total, normalised to 1 - H.
        m_offset = m_log1mH - (ref + std::log(total));
        // The first arg-max of the joint carries over to run length + 1.
        const std::size_t map = out.top + m_offset > m_logH ? std::size_t(out.topAt) - m_start + 1 : 0;
        m_topRest = out.topRest; // not out.top: that depends on the offset (run length 0), this does not

        --m_start; // the new run length 0
        m_logR0 = m_logH; // P(r = 0) = H exactly with a constant hazard
        ++m_k;
        if (std::abs(m_offset) > 64.0) { // keep the stored values near the normalised ones (precision)
            Simd<W>::addTo(roundDown(m_start), roundUp(m_start + m_k), m_stored.data(), m_offset);
            m_topRest += m_offset;
            m_offset = 0.0;
        }
        m_rec.recordPoint(t, m_k, map, [this](std::size_t r, double* e) { expAt(r, e); });
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
    [[gnu::always_inline]] double logR(std::size_t r) const
    {
        return r == 0 ? m_logR0 : m_stored[m_start + r] + m_offset;
    }

    // exp(log P(r + i)) for i < kBlock, 0 past the live run lengths.
    [[gnu::always_inline]] void expAt(std::size_t r, double* e) const
    {
        double v[kBlock];
        const double* stored = m_stored.data() + m_start + r; // readable: the arrays extend past the window
        for (std::size_t i = 0; i < kBlock; ++i)
            v[i] = stored[i] + m_offset;
        if (r == 0)
            v[0] = m_logR0;
        if (r + kBlock > m_k)
            for (std::size_t i = m_k > r ? m_k - r : 0; i < kBlock; ++i)
                v[i] = kNegInf;
        Simd<W>::expBlock(v, e);
    }

    void setPrior(std::size_t pos)
    {
        for (Dim& d : m_dim) {
            d.mu[pos] = m_p.mu0;
            d.beta[pos] = m_p.beta0;
            d.logBeta[pos] = m_logBeta0;
        }
    }

    // Moves the window to the top of (new, larger if need be) arrays, filled with neutral values elsewhere.
    void relocate()
    {
        const std::size_t cap = std::max(m_cap, roundUp(4 * (m_k + 2 * kBlock)));
        const std::size_t start = cap - roundUp(m_k) - 2 * kBlock;
        auto move = [&](AlignedArray& a, double fill) {
            AlignedArray b;
            b.assign(cap, fill);
            if (m_cap)
                std::copy(a.data() + m_start, a.data() + m_start + m_k, b.data() + start);
            a = std::move(b);
        };
        move(m_stored, kNegInf);
        for (Dim& d : m_dim) {
            move(d.mu, 0.0);
            move(d.beta, 1.0);
            move(d.logBeta, 0.0);
        }
        m_lp.assign(cap, 0.0);
        m_cap = cap;
        m_start = start;
    }

    // ocp's truncation: drop the longest run lengths while their summed probability (summed from the
    // longest down, in long double like R's cumsum) stays below the threshold, then apply the cap. With
    // `best`, the dropped run lengths' segmentation scores go to (top, at) first.
    [[gnu::always_inline]] void prune(const double* best, double& top, double& at)
    {
        std::size_t keep = m_k;
        if (keep <= 1)
            return;
        // Most points drop nothing: the longest run alone holds more than the threshold (with a margin for
        // the rounding of exp and log, else the exact test below decides).
        if (m_p.pruneThreshold > 0.0 && !(logR(keep - 1) > m_logPrune + 1e-9)) {
            long double tail = 0.0L;
            double e[kBlock];
            std::size_t b = keep; // e holds exp(log P(b .. b+kBlock))
            while (keep > 0) {
                if (keep - 1 < b) {
                    b = keep > kBlock ? keep - kBlock : 0;
                    expAt(b, e);
                }
                tail += e[keep - 1 - b];
                if (static_cast<double>(tail) >= m_p.pruneThreshold)
                    break;
                --keep;
            }
            keep = std::max<std::size_t>(keep, 1);
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
        Simd<W>::padFrom(m_stored.data(), m_start + keep); // one vector store: the next pass loads it whole
        m_k = keep;
    }

    // Tables up to run length size - kBlock - 1 (index r + kBlock), the neutral entries below r = 0 first.
    void growTables(std::size_t size)
    {
        if (m_tab.logC.empty())
            for (std::size_t i = 0; i < kBlock; ++i) {
                m_tab.logC.push_back(0.0);
                m_tab.alpha.push_back(1.0);
                m_tab.shrink.push_back(0.0);
                m_tab.invKappa1.push_back(0.0);
            }
        for (std::size_t r = m_tab.logC.size() - kBlock; r + kBlock < size; ++r) {
            const double kappa = m_p.kappa0 + static_cast<double>(r);
            const double alpha = m_p.alpha0 + 0.5 * static_cast<double>(r);
            const double logC = logGammaPositive(alpha + 0.5) - logGammaPositive(alpha)
                                - 0.5 * std::log(2.0 * std::numbers::pi * (kappa + 1.0) / kappa);
            m_tab.logC.push_back(logC);
            m_tab.alpha.push_back(alpha);
            m_tab.shrink.push_back(kappa / (2.0 * (kappa + 1.0)));
            m_tab.invKappa1.push_back(1.0 / (kappa + 1.0));
            m_maxLogC.push_back(r ? std::max(m_maxLogC.back(), logC) : logC);
        }
    }

    BocdParams m_p;
    std::size_t m_dims;
    Recorder& m_rec;
    double m_logH;
    double m_log1mH;
    double m_logBeta0;
    double m_logPrune;
    std::vector<Dim> m_dim;
    AlignedArray m_stored, m_lp;
    std::size_t m_cap = 0;
    std::size_t m_start = 0; // position of run length 0
    std::size_t m_k = 0;     // live run lengths
    double m_offset = 0.0;   // log P(r) = stored + offset for r >= 1
    double m_logR0 = 0.0;    // log P(r = 0)
    double m_topRest = kNegInf; // max of stored over r >= 1 (an estimate of where the next joint peaks)
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
    std::vector<double> point(dims);
    for (std::size_t t = 0; t < n; ++t) {
        for (std::size_t d = 0; d < dims; ++d)
            point[d] = columns[d][t];
        bocd.step(t, point.data());
    }
    if (n)
        bocd.finish(n);
    return rec.finish();
}

using Columns = std::vector<std::vector<double>>;
BocdResult runFastBaseline(const Columns& c, std::size_t n, const BocdParams& p) { return runFastW<2>(c, n, p); }
double maxSumBaseline(std::size_t k, const double* x, const double* y) { return Simd<2>::maxSum(k, x, y); }
void expBlockBaseline(const double* in, double* out) { Simd<2>::expBlock(in, out); }

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PRISM_BOCD_X86 1
__attribute__((target("avx2"))) BocdResult runFastAvx2(const Columns& c, std::size_t n, const BocdParams& p)
{
    return runFastW<4>(c, n, p);
}
__attribute__((target("avx2"))) double maxSumAvx2(std::size_t k, const double* x, const double* y)
{
    return Simd<4>::maxSum(k, x, y);
}
__attribute__((target("avx2"))) void expBlockAvx2(const double* in, double* out) { Simd<4>::expBlock(in, out); }
__attribute__((target("avx512f"))) BocdResult runFastAvx512(const Columns& c, std::size_t n, const BocdParams& p)
{
    return runFastW<8>(c, n, p);
}
__attribute__((target("avx512f"))) double maxSumAvx512(std::size_t k, const double* x, const double* y)
{
    return Simd<8>::maxSum(k, x, y);
}
__attribute__((target("avx512f"))) void expBlockAvx512(const double* in, double* out)
{
    Simd<8>::expBlock(in, out);
}
#endif

const KernelSet kBaseline{runFastBaseline, maxSumBaseline, expBlockBaseline, 2};
#ifdef PRISM_BOCD_X86
const KernelSet kAvx2{runFastAvx2, maxSumAvx2, expBlockAvx2, 4};
const KernelSet kAvx512{runFastAvx512, maxSumAvx512, expBlockAvx512, 8};
#endif

const KernelSet* bestKernels()
{
#ifdef PRISM_BOCD_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return &kAvx512;
    if (__builtin_cpu_supports("avx2"))
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
