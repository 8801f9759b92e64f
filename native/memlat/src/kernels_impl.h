/* Traffic kernels, compiled once per instruction set by kernels.c (included with KSUF/KATTR/KISA set).
 * A line access is one whole 64-byte line: loads add its 64-bit words into an accumulator (so nothing
 * is optimised away and --count_check can verify which lines were read), stores write acc+1 to every word.
 */
#define KCAT2(a, b) a##_##b
#define KCAT(a, b) KCAT2(a, b)
#define KN(x) KCAT(x, KSUF)

#if KISA == 2 /* AVX2: two 32-byte accesses per line */
typedef struct { __m256i a, b; } KN(acc_t);
#define ACC_ZERO(x) do { (x).a = _mm256_setzero_si256(); (x).b = _mm256_setzero_si256(); } while (0)
#define LD(x, p) do { (x).a = _mm256_add_epi64((x).a, _mm256_load_si256((const __m256i *)(p))); \
                      (x).b = _mm256_add_epi64((x).b, _mm256_load_si256((const __m256i *)((p) + 32))); } while (0)
#define VAL(x) _mm256_add_epi64(_mm256_add_epi64((x).a, (x).b), _mm256_set1_epi64x(1))
#define ST(x, p) do { __m256i v_ = VAL(x); _mm256_store_si256((__m256i *)(p), v_); \
                      _mm256_store_si256((__m256i *)((p) + 32), v_); } while (0)
#define NT(x, p) do { __m256i v_ = VAL(x); _mm256_stream_si256((__m256i *)(p), v_); \
                      _mm256_stream_si256((__m256i *)((p) + 32), v_); } while (0)
#define FENCE() _mm_sfence()
static inline KATTR uint64_t KN(acc_sum)(KN(acc_t) x)
{
    uint64_t w[8];
    _mm256_storeu_si256((__m256i *)w, x.a);
    _mm256_storeu_si256((__m256i *)(w + 4), x.b);
    return w[0] + w[1] + w[2] + w[3] + w[4] + w[5] + w[6] + w[7];
}
#elif KISA == 1 /* SSE2: four 16-byte accesses per line, _mm_stream_si128 for NT */
typedef struct { __m128i a, b, c, d; } KN(acc_t);
#define ACC_ZERO(x) do { (x).a = (x).b = (x).c = (x).d = _mm_setzero_si128(); } while (0)
#define LD(x, p) do { (x).a = _mm_add_epi64((x).a, _mm_load_si128((const __m128i *)(p))); \
                      (x).b = _mm_add_epi64((x).b, _mm_load_si128((const __m128i *)((p) + 16))); \
                      (x).c = _mm_add_epi64((x).c, _mm_load_si128((const __m128i *)((p) + 32))); \
                      (x).d = _mm_add_epi64((x).d, _mm_load_si128((const __m128i *)((p) + 48))); } while (0)
#define VAL(x) _mm_add_epi64(_mm_add_epi64(_mm_add_epi64((x).a, (x).b), _mm_add_epi64((x).c, (x).d)), \
                             _mm_set1_epi64x(1))
#define ST(x, p) do { __m128i v_ = VAL(x); for (int q_ = 0; q_ < 64; q_ += 16) \
                      _mm_store_si128((__m128i *)((p) + q_), v_); } while (0)
#define NT(x, p) do { __m128i v_ = VAL(x); for (int q_ = 0; q_ < 64; q_ += 16) \
                      _mm_stream_si128((__m128i *)((p) + q_), v_); } while (0)
#define FENCE() _mm_sfence()
static inline uint64_t KN(acc_sum)(KN(acc_t) x)
{
    uint64_t w[8];
    _mm_storeu_si128((__m128i *)w, x.a);
    _mm_storeu_si128((__m128i *)(w + 2), x.b);
    _mm_storeu_si128((__m128i *)(w + 4), x.c);
    _mm_storeu_si128((__m128i *)(w + 6), x.d);
    return w[0] + w[1] + w[2] + w[3] + w[4] + w[5] + w[6] + w[7];
}
#else /* portable C; NT store = AArch64 STNP where available, else an ordinary store (see README) */
typedef struct { uint64_t w[8]; } KN(acc_t);
#define ACC_ZERO(x) memset(&(x), 0, sizeof(x))
#define LD(x, p) do { const volatile uint64_t *q_ = (const volatile uint64_t *)(p); \
                      for (int i_ = 0; i_ < 8; i_++) (x).w[i_] += q_[i_]; } while (0)
static inline uint64_t KN(acc_sum)(KN(acc_t) x)
{
    uint64_t s = 0;
    for (int i = 0; i < 8; i++) s += x.w[i];
    return s;
}
#define VALP(x) (KN(acc_sum)(x) + 1)
#define ST(x, p) do { volatile uint64_t *q_ = (volatile uint64_t *)(p); uint64_t v_ = VALP(x); \
                      for (int i_ = 0; i_ < 8; i_++) q_[i_] = v_; } while (0)
#if defined(__aarch64__)
#define NT(x, p) do { uint64_t v_ = VALP(x); for (int i_ = 0; i_ < 64; i_ += 16) \
                      __asm__ volatile("stnp %0, %0, [%1]" :: "r"(v_), "r"((p) + i_) : "memory"); } while (0)
#else
#define NT(x, p) ST(x, p)
#endif
#define FENCE() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#endif

/* the injection delay, inlined so delay 0 and delay 1 run the same code (see spin_delay in kernels.c) */
#define SPIN(d) do { for (uint64_t i_ = 0; i_ < (d); i_++) __asm__ volatile("" : "+r"(i_)); } while (0)
#define ADV(off, size) do { (off) += LINE_BYTES; if ((off) >= (size)) (off) = 0; } while (0)

static KATTR void KN(run_steps)(const struct traffic *t, struct kstate *s, uint64_t steps, uint64_t delay)
{
    KN(acc_t) x;
    ACC_ZERO(x);
    char *rd0 = s->rd0, *rd1 = s->rd1, *wr = s->wr;
    size_t r0 = s->r0, r1 = s->r1, w = s->w, rsize = s->rsize, wsize = s->wsize;
    int nt_used = 0;

    if (t->nops == 1 && t->ops[0] == OP_LOAD) {
        /* all reads: four lines per iteration (rsize is a multiple of 256) */
        while (steps >= 4 && r0 + 256 <= rsize) {
            const char *p = rd0 + r0;
            LD(x, p);
            SPIN(delay);
            LD(x, p + 64);
            SPIN(delay);
            LD(x, p + 128);
            SPIN(delay);
            LD(x, p + 192);
            SPIN(delay);
            r0 += 256;
            if (r0 >= rsize) r0 = 0;
            steps -= 4;
        }
    }
    for (uint64_t i = 0; i < steps; i++) {
        for (int k = 0; k < t->nops; k++) {
            switch (t->ops[k]) {
            case OP_LOAD: LD(x, rd0 + r0); ADV(r0, rsize); break;
            case OP_LOAD2: LD(x, rd1 + r1); ADV(r1, rsize); break;
            case OP_STORE: ST(x, wr + w); ADV(w, wsize); break;
            case OP_NT: NT(x, wr + w); ADV(w, wsize); nt_used = 1; break;
            }
            SPIN(delay);
        }
    }
    if (nt_used)
        FENCE();
    s->r0 = r0;
    s->r1 = r1;
    s->w = w;
    s->acc += KN(acc_sum)(x);
}

#undef KCAT2
#undef KCAT
#undef KN
#undef ACC_ZERO
#undef LD
#undef VAL
#undef VALP
#undef ST
#undef NT
#undef FENCE
#undef ADV
#undef SPIN
