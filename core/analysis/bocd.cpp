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
// The per-run-length work (one log for the predictive, one exp for the normalisation, a max scan) dominates.
// It is written with GCC/Clang vector extensions, instantiated for the CPU's native width (AVX-512: 8
// doubles, AVX2: 4, SSE2 or another baseline: 2) and picked once at run time. Every width walks the run
// lengths in blocks of 8 and keeps one accumulator per block lane, with the same IEEE operations in the same
// order and no FMA contraction, so all machines give bit-identical results. log and exp are our own
// branch-free versions: a libm call cannot be vectorised without -ffast-math. Arrays are padded to blocks.

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

// Per-run-length tables: kappa = kappa0 + r, alpha = alpha0 + r/2 and what depends only on them.
struct Tables {
    std::vector<double> logC;      // log Γ(α+½)/Γ(α) - ½ log(2π(κ+1)/κ): Student-t constant without the rate
    std::vector<double> alpha;
    std::vector<double> shrink;    // κ / (2(κ+1)): the rate grows by shrink * (x - μ)²
    std::vector<double> kappa;
    std::vector<double> invKappa1; // 1 / (κ+1)
    std::vector<double> maxLogC;   // max of logC[0..r]
};

struct DimBuffers {
    const double* mu;
    const double* beta;
    const double* logBeta;
    double* muOut;
    double* betaOut;
    double* logBetaOut;
};

// One point of the recursion over k live run lengths.
struct StepArgs {
    std::size_t k;
    std::size_t dims;
    const double* x;         // one value per dimension
    const DimBuffers* dim;   // per dimension: current state, and where run length r+1 goes
    const Tables* tables;
    const double* logR;      // log P(r) before the point, padded with -inf
    double* joint;           // scratch: log P(r) + log p(x | r)
    double* nextLogR;        // written at r+1 (the caller sets r = 0)
    double log1mH;
    double bound;            // joint <= bound (logR <= 0 and each density <= exp(max logC) / sqrt(beta0))
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

template <std::size_t W>
struct Simd {
    using D = typename VectorOf<W>::D;
    using U = typename VectorOf<W>::U;
    static constexpr std::size_t kParts = kBlock / W;

    // Vectors go by reference: passed by value their ABI depends on the ISA, and these are always inlined.
    [[gnu::always_inline]] static void load(D& v, const double* p) { std::memcpy(&v, p, sizeof v); }
    [[gnu::always_inline]] static void store(double* p, const D& v) { std::memcpy(p, &v, sizeof v); }

    // log x for positive normal x (relative error ~1e-16): x = 2^k z with z in [sqrt(1/2), sqrt(2)), and
    // log z = 2 atanh(s), s = (z-1)/(z+1), |s| < 0.172, by its series to s^21 (Estrin's scheme: short chains).
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
        const D q0 = (1.0 + s2 * (1.0 / 3)) + s4 * ((1.0 / 5) + s2 * (1.0 / 7));
        const D q1 = ((1.0 / 9) + s2 * (1.0 / 11)) + s4 * ((1.0 / 13) + s2 * (1.0 / 15));
        const D q2 = ((1.0 / 17) + s2 * (1.0 / 19)) + s4 * (1.0 / 21);
        const D series = q0 + s8 * (q1 + s8 * q2);
        out = k * kLn2Hi + (2.0 * s * series + k * kLn2Lo);
    }

    // exp y (relative error ~1e-16) for y <= 709; exactly 0 below -708 (negligible next to the largest term,
    // which is 1). y = k ln2 + r, |r| <= ln2/2, e^r by its Taylor series to r^13, k added to the exponent.
    [[gnu::always_inline]] static void exp(const D& y, D& out)
    {
        const auto tiny = y < -708.0;
        const D yc = tiny ? D{} - 708.0 : y;
        constexpr double kRound = 0x1.8p52; // adding it rounds to an integer held in the low mantissa bits
        const D kr = yc * 1.4426950408889634 + kRound;
        const U kBits = reinterpret_cast<U>(kr);
        const D k = kr - kRound;
        const D r = (yc - k * kLn2Hi) - k * kLn2Lo;
        const D r2 = r * r;
        const D r4 = r2 * r2;
        const D r8 = r4 * r4;
        const D q0 = (1.0 + r) + r2 * (0.5 + r * (1.0 / 6));
        const D q1 = (1.0 / 24 + r * (1.0 / 120)) + r2 * (1.0 / 720 + r * (1.0 / 5040));
        const D q2 = (1.0 / 40320 + r * (1.0 / 362880)) + r2 * (1.0 / 3628800 + r * (1.0 / 39916800));
        const D q3 = 1.0 / 479001600 + r * (1.0 / 6227020800);
        const D p = (q0 + r4 * q1) + r8 * (q2 + r4 * q3);
        const D e = reinterpret_cast<D>(reinterpret_cast<U>(p) + (kBits << 52));
        out = tiny ? D{} : e;
    }

    [[gnu::always_inline]] static double maxOf(const D (&parts)[kParts])
    {
        double m = kNegInf;
        for (const D& v : parts)
            for (std::size_t l = 0; l < W; ++l)
                m = std::max(m, v[l]);
        return m;
    }

    // For dimension d: joint[r] = (d == 0 ? logR : joint)[r] + log p(x_d | r), and the posterior of run
    // length r+1 written at r+1. With β' = β + κ(x-μ)²/(2(κ+1)), the updated rate, the Student-t log density
    // is logC + α log β - (α+½) log β': one log per run length. Returns the maximum of joint. For the last
    // dimension (Sum) it also accumulates exp(joint - bound) per block lane into sum, in the same pass.
    template <bool Sum>
    [[gnu::always_inline]] static double predict(const StepArgs& a, std::size_t d, double bound, D (&sum)[kParts])
    {
        // Local copies: stores through double* could alias the argument structs, so the compiler would
        // reload every pointer in the loop.
        const DimBuffers in = a.dim[d];
        const double* __restrict mu = in.mu;
        const double* __restrict beta = in.beta;
        const double* __restrict logBeta = in.logBeta;
        double* __restrict muOut = in.muOut;
        double* __restrict betaOut = in.betaOut;
        double* __restrict logBetaOut = in.logBetaOut;
        const double* __restrict shrink = a.tables->shrink.data();
        const double* __restrict alpha = a.tables->alpha.data();
        const double* __restrict logC = a.tables->logC.data();
        const double* __restrict kappa = a.tables->kappa.data();
        const double* __restrict invKappa1 = a.tables->invKappa1.data();
        const double* base = d == 0 ? a.logR : a.joint;
        double* joint = a.joint;
        const std::size_t k = a.k;
        const D xv = D{} + a.x[d];
        D mx[kParts];
        for (D& v : mx)
            v = D{} + kNegInf;
        D m, b, lb, al, v, c, kap, inv, e;
        for (std::size_t block = 0; block < k; block += kBlock)
            for (std::size_t part = 0; part < kParts; ++part) {
                const std::size_t r = block + part * W;
                load(m, mu + r);
                load(b, beta + r);
                load(v, shrink + r);
                const D diff = xv - m;
                b = b + v * diff * diff;
                log(b, lb);
                load(al, alpha + r);
                load(c, logC + r);
                load(v, logBeta + r);
                const D lp = c + al * v - (al + 0.5) * lb;
                load(v, base + r);
                const D j = v + lp;
                store(joint + r, j);
                mx[part] = j > mx[part] ? j : mx[part];
                if constexpr (Sum) {
                    exp(j - bound, e);
                    sum[part] += e;
                }
                load(kap, kappa + r);
                load(inv, invKappa1 + r);
                store(muOut + r + 1, (kap * m + xv) * inv);
                store(betaOut + r + 1, b);
                store(logBetaOut + r + 1, lb);
            }
        return maxOf(mx);
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

    // The whole point: predictives, then normalisation. Returns the shift with nextLogR[r+1] = joint[r] +
    // shift; `top` receives the maximum of joint.
    //
    // log Σ exp(joint) is taken relative to a.bound, an upper bound of joint known before the pass, rather
    // than to the maximum: the exps then run in the same pass as the predictives and stay off the chain
    // that each point's normalisation forms with the next. Only if every term underflows (joint 700 below
    // the bound: a wild outlier on raw data) is the sum redone relative to the maximum.
    [[gnu::always_inline]] static double step(const StepArgs& a, double& top)
    {
        D sum[kParts] = {};
        for (std::size_t d = 0; d + 1 < a.dims; ++d)
            predict<false>(a, d, 0.0, sum);
        top = predict<true>(a, a.dims - 1, a.bound, sum); // padding lanes stay -inf: they start from logR's
        const double* joint = a.joint;
        const std::size_t k = a.k;
        double total1 = total(sum);
        double ref = a.bound;
        D v, e;
        if (!(total1 > 1e-290)) {
            ref = top;
            for (D& x : sum)
                x = D{};
            for (std::size_t block = 0; block < k; block += kBlock)
                for (std::size_t part = 0; part < kParts; ++part) {
                    load(v, joint + block + part * W);
                    exp(v - top, e);
                    sum[part] += e;
                }
            total1 = total(sum);
        }
        const double shift = a.log1mH - (ref + std::log(total1));
        double* next = a.nextLogR;
        for (std::size_t r = 0; r < k; r += W) {
            load(v, joint + r);
            store(next + r + 1, v + shift);
        }
        return shift;
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

double stepBaseline(const StepArgs& a, double& top) { return Simd<2>::step(a, top); }
double maxSumBaseline(std::size_t k, const double* x, const double* y) { return Simd<2>::maxSum(k, x, y); }
void expBlockBaseline(const double* in, double* out) { Simd<2>::expBlock(in, out); }

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PRISM_BOCD_X86 1
__attribute__((target("avx2"))) double stepAvx2(const StepArgs& a, double& top) { return Simd<4>::step(a, top); }
__attribute__((target("avx2"))) double maxSumAvx2(std::size_t k, const double* x, const double* y)
{
    return Simd<4>::maxSum(k, x, y);
}
__attribute__((target("avx2"))) void expBlockAvx2(const double* in, double* out) { Simd<4>::expBlock(in, out); }
__attribute__((target("avx512f"))) double stepAvx512(const StepArgs& a, double& top)
{
    return Simd<8>::step(a, top);
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

struct KernelSet {
    double (*step)(const StepArgs&, double&);
    double (*maxSum)(std::size_t, const double*, const double*);
    void (*expBlock)(const double*, double*);
};

const KernelSet& kernels()
{
    static const KernelSet set = [] {
#ifdef PRISM_BOCD_X86
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512f"))
            return KernelSet{stepAvx512, maxSumAvx512, expBlockAvx512};
        if (__builtin_cpu_supports("avx2"))
            return KernelSet{stepAvx2, maxSumAvx2, expBlockAvx2};
#endif
        return KernelSet{stepBaseline, maxSumBaseline, expBlockBaseline};
    }();
    return set;
}

#if !defined(__clang__)
#pragma GCC pop_options
#endif

// Everything computed from the posterior after each point: the MAP run length, the lagged change-point
// probabilities and ocp's most-probable-segmentation recursion. Shared by the fast and the exact path.
class Recorder {
public:
    Recorder(std::size_t n, const BocdParams& p) : m_n(n), m_params(p)
    {
        m_result.cpProbability.assign(n, 0.0);
        m_result.startProbability.assign(n, 0.0);
        m_result.mapRunLength.assign(n, 0);
        if (p.segmentation) {
            // m_back[k]: start of the last segment of the best path scored in ocp's probmaxes[k+1]. Those
            // scores are kept reversed (m_revBest[m_n + 1 - k]) so that the scan over run lengths runs forward.
            m_back.assign(n + 2, 0);
            m_revBest.assign(n + 2 + n + 2 * kBlock, 0.0);
        }
    }

    // logR[r] = log P(r_t = r | x[0..t]) for r < size (longer run lengths were pruned); padded with -inf to a
    // whole vector. map: the first arg-max of logR if the caller knows it, else kUnknown.
    static constexpr std::size_t kUnknown = std::numeric_limits<std::size_t>::max();
    void record(std::size_t t, const double* logR, std::size_t size, std::size_t map = kUnknown)
    {
        m_result.maxRunLengthsKept = std::max(m_result.maxRunLengthsKept, size);
        m_totalKept += size;

        if (map == kUnknown) {
            m_zeros.resize(roundUp(size), 0.0);
            const double top = kernels().maxSum(size, logR, m_zeros.data());
            for (map = 0; logR[map] != top;) // the first maximum: the shorter run on ties
                ++map;
        }
        m_result.mapRunLength[t] = map;

        // Point i is read once its window [i-w, i+w] has `lag` successors; the last points at the end.
        const std::size_t delay = m_params.lag + m_params.window;
        if (t >= delay + 1)
            readPoint(t - delay, t, logR, size);
        if (t + 1 == m_n)
            for (std::size_t i = t > delay ? t - delay + 1 : 1; i <= t; ++i)
                readPoint(i, t, logR, size);

        if (m_params.segmentation) {
            // ocp's findCPprobs: the best path ending with a run of length r scores log P(r_t = r) + probmaxes
            // at the run's start k = t+1-r (with the reference's one-step shift). Ties go to the earliest start
            // (the longest run), as R's which.max does.
            const double* best = m_revBest.data() + (m_n - t); // best[r] = score at k = t + 1 - r
            const double value = kernels().maxSum(size, logR, best);
            std::size_t r = size - 1;
            while (logR[r] + best[r] != value)
                --r;
            m_revBest[m_n + 1 - (t + 2)] = value;
            m_back[t + 2] = t + 1 - r;
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
    // the series start, not past t): run lengths rLo..rHi, contiguous in logR, exponentiated a block at a time
    // by the vector kernel (logR is readable a block past its size; values at r >= size are ignored).
    void readPoint(std::size_t i, std::size_t t, const double* logR, std::size_t size)
    {
        const std::size_t w = m_params.window;
        const std::size_t sLo = std::max<std::size_t>(1, i > w ? i - w : 0);
        const std::size_t sHi = std::min(i + w, t);
        const std::size_t rLo = t - sHi + 1;
        const std::size_t rHi = std::min(t - sLo + 1, size - 1); // rHi < rLo: all pruned
        double sum = 0.0, start = 0.0;
        double e[kBlock];
        for (std::size_t b = rLo; b <= rHi; b += kBlock) {
            kernels().expBlock(logR + b, e);
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

// The pruned recursion. State per kept run length r: posterior mean and rate per dimension (and the log of
// the rate), plus log P(r). Updated run lengths move up by one, so the state is double-buffered rather than
// shifted. Buffers are padded past the live entries so the kernels work on whole vectors.
class FastBocd {
public:
    FastBocd(const BocdParams& p, std::size_t dims)
        : m_p(p), m_dims(dims), m_logH(-std::log(p.lambda)), m_log1mH(std::log1p(-1.0 / p.lambda)),
          m_logBeta0(std::log(p.beta0)), m_logPrune(p.pruneThreshold > 0 ? std::log(p.pruneThreshold) : kNegInf),
          m_cur(dims), m_next(dims)
    {
        reserve(1);
        for (std::size_t d = 0; d < dims; ++d)
            setPrior(m_cur[d]);
        m_logR[0] = 0.0;
        m_k = 1;
    }

    // x: one value per dimension.
    void step(std::size_t t, const double* x, Recorder& rec)
    {
        prune();
        const std::size_t k = m_k;
        reserve(k + 1);
        growTables(roundUp(k + 1));
        m_dimBuffers.clear();
        for (std::size_t d = 0; d < m_dims; ++d) {
            Dim& in = m_cur[d];
            Dim& out = m_next[d];
            setPrior(out);
            m_dimBuffers.push_back({in.mu.data(), in.beta.data(), in.logBeta.data(), out.mu.data(), out.beta.data(),
                                    out.logBeta.data()});
        }
        // The rate only grows from beta0, so log p(x | r) <= logC[r] - log(beta0) / 2 in each dimension.
        const double bound = double(m_dims) * (m_tables.maxLogC[k - 1] - 0.5 * m_logBeta0);
        const StepArgs args{k, m_dims, x, m_dimBuffers.data(), &m_tables, m_logR.data(), m_joint.data(),
                            m_nextLogR.data(), m_log1mH, bound};
        double top = 0;
        const double shift = kernels().step(args, top);
        m_nextLogR[0] = m_logH; // P(r = 0) = H exactly with a constant hazard
        padNegInf(m_nextLogR, k + 1);
        m_logR.swap(m_nextLogR);
        m_cur.swap(m_next);
        m_k = k + 1;
        // logR[r+1] = joint[r] + shift, so the first arg-max of joint carries over.
        std::size_t map = 0;
        if (top + shift > m_logH)
            for (map = 1; m_joint[map - 1] != top;)
                ++map;
        rec.record(t, m_logR.data(), m_k, map);
    }

private:
    struct Dim {
        std::vector<double> mu, beta, logBeta;
    };

    static void padNegInf(std::vector<double>& v, std::size_t live)
    {
        std::fill(v.begin() + std::ptrdiff_t(live), v.begin() + std::ptrdiff_t(roundUp(live)), kNegInf);
    }

    void setPrior(Dim& d) const
    {
        d.mu[0] = m_p.mu0;
        d.beta[0] = m_p.beta0;
        d.logBeta[0] = m_logBeta0;
    }

    // Room for `live` entries plus a whole vector written past them.
    void reserve(std::size_t live)
    {
        const std::size_t need = roundUp(live) + 2 * kBlock;
        if (m_logR.size() >= need)
            return;
        const std::size_t size = std::max(need, 2 * m_logR.size());
        for (auto* v : {&m_logR, &m_nextLogR, &m_joint})
            v->resize(size, kNegInf);
        for (auto* dims : {&m_cur, &m_next})
            for (Dim& d : *dims)
                for (auto* v : {&d.mu, &d.beta, &d.logBeta})
                    v->resize(size, 1.0); // padding lanes stay finite
    }

    // ocp's truncation: drop the longest run lengths while their summed probability (summed from the
    // longest down, in long double like R's cumsum) stays below the threshold, then apply the cap.
    void prune()
    {
        std::size_t keep = m_k;
        if (keep <= 1)
            return;
        // Most points drop nothing: the longest run alone holds more than the threshold (with a margin for
        // the rounding of exp and log, else the exact test below decides).
        if (m_p.pruneThreshold > 0.0 && !(m_logR[keep - 1] > m_logPrune + 1e-9)) {
            long double tail = 0.0L;
            while (keep > 0) {
                tail += std::exp(m_logR[keep - 1]);
                if (static_cast<double>(tail) >= m_p.pruneThreshold)
                    break;
                --keep;
            }
            keep = std::max<std::size_t>(keep, 1);
        }
        if (m_p.maxRunLength > 0)
            keep = std::min(keep, m_p.maxRunLength);
        m_k = keep;
        padNegInf(m_logR, keep);
    }

    void growTables(std::size_t size)
    {
        for (std::size_t r = m_tables.logC.size(); r < size; ++r) {
            const double kappa = m_p.kappa0 + static_cast<double>(r);
            const double alpha = m_p.alpha0 + 0.5 * static_cast<double>(r);
            m_tables.logC.push_back(logGammaPositive(alpha + 0.5) - logGammaPositive(alpha)
                                    - 0.5 * std::log(2.0 * std::numbers::pi * (kappa + 1.0) / kappa));
            m_tables.alpha.push_back(alpha);
            m_tables.shrink.push_back(kappa / (2.0 * (kappa + 1.0)));
            m_tables.kappa.push_back(kappa);
            m_tables.invKappa1.push_back(1.0 / (kappa + 1.0));
            const double logC = m_tables.logC.back();
            m_tables.maxLogC.push_back(r ? std::max(m_tables.maxLogC.back(), logC) : logC);
        }
    }

    BocdParams m_p;
    std::size_t m_dims;
    double m_logH;
    double m_log1mH;
    double m_logBeta0;
    double m_logPrune;
    std::vector<Dim> m_cur, m_next;
    std::vector<DimBuffers> m_dimBuffers;
    std::vector<double> m_logR, m_nextLogR, m_joint;
    std::size_t m_k = 0; // live run lengths in m_logR
    Tables m_tables;
};

BocdResult runFast(const std::vector<std::vector<double>>& columns, std::size_t n, const BocdParams& p)
{
    const std::size_t dims = columns.size();
    Recorder rec(n, p);
    FastBocd bocd(p, dims);
    std::vector<double> point(dims);
    for (std::size_t t = 0; t < n; ++t) {
        for (std::size_t d = 0; d < dims; ++d)
            point[d] = columns[d][t];
        bocd.step(t, point.data(), rec);
    }
    return rec.finish();
}

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
