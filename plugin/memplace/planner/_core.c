/*
 * memplace planner core: first-fit placement and the exact offset search, in C for speed.
 *
 * Plain C99 with no Python headers: `planner/core.py` loads it with ctypes, and holds a
 * pure-Python twin of both entry points that makes the same decisions in the same order
 * (the tests compare the two). Blocks arrive as parallel int64 arrays; lifetimes are
 * inclusive step ranges [first, last]; offsets are bytes from the start of the place.
 *
 * Time is cut into sections: the intervals between consecutive distinct points
 * first[i] and last[i] + 1. Block i covers the sections [a[i], b[i]).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MP_CORE_ABI 6

typedef int64_t i64;

#define SEED_MIX 0x9E3779B97F4A7C15ULL /* a seed's bits spread before its first draw */
#define NOISE 300                      /* a seeded search's noise: up to 300/1000 of a key */

enum { FOUND = 0, INFEASIBLE = 1, NODE_LIMIT = 2, TIME_LIMIT = 3, NO_MEMORY = -1 };

int mp_abi(void) { return MP_CORE_ABI; }

static i64 align_up(i64 value, i64 align) { return (value + align - 1) / align * align; }

/* xorshift64: the seeded noise of both searches (the Python twin draws the same). */
static uint64_t xorshift(uint64_t *state) {
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    return x;
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_i64(const void *x, const void *y) {
    i64 a = *(const i64 *)x, b = *(const i64 *)y;
    return (a > b) - (a < b);
}

/* Section indices of every block; returns the number of sections, or -1 without memory. */
static int cut_sections(int n, const i64 *first, const i64 *last, int *a, int *b) {
    i64 *points = malloc(sizeof(i64) * (size_t)(2 * n + 1));
    if (!points) return -1;
    for (int i = 0; i < n; i++) {
        points[2 * i] = first[i];
        points[2 * i + 1] = last[i] + 1;
    }
    qsort(points, (size_t)(2 * n), sizeof(i64), cmp_i64);
    int count = 0;
    for (int i = 0; i < 2 * n; i++)
        if (count == 0 || points[count - 1] != points[i]) points[count++] = points[i];
    for (int i = 0; i < n; i++) {
        int lo = 0, hi = count - 1;
        while (lo < hi) { /* first point >= first[i] */
            int mid = (lo + hi) / 2;
            if (points[mid] < first[i]) lo = mid + 1; else hi = mid;
        }
        a[i] = lo;
        hi = count - 1;
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (points[mid] < last[i] + 1) lo = mid + 1; else hi = mid;
        }
        b[i] = lo;
    }
    free(points);
    return count > 0 ? count - 1 : 0;
}

/* The steps in each section (as cut by `cut_sections`); -1 without memory. */
static int section_lengths(int n, const i64 *first, const i64 *last, i64 *length) {
    i64 *points = malloc(sizeof(i64) * (size_t)(2 * n + 1));
    if (!points) return -1;
    for (int i = 0; i < n; i++) {
        points[2 * i] = first[i];
        points[2 * i + 1] = last[i] + 1;
    }
    qsort(points, (size_t)(2 * n), sizeof(i64), cmp_i64);
    int count = 0;
    for (int i = 0; i < 2 * n; i++)
        if (count == 0 || points[count - 1] != points[i]) points[count++] = points[i];
    for (int q = 0; q + 1 < count; q++) length[q] = points[q + 1] - points[q];
    free(points);
    return 0;
}

/* ------------------------------------------------------------------------------------- */
/* First fit. Per place, the placed blocks are indexed over sections so that the ones a new
 * block [a, b) conflicts with are found in O(log sections + answers): those covering
 * section a (a stabbing query on `cover`, a segment tree holding each block in the nodes
 * that tile its range) plus those starting inside (a, b) (`leaf` k holds the blocks whose
 * first section is k; a range wider than NARROW sections asks `starts`, which holds each
 * block in every ancestor of its first section, kept only when some block is that wide).
 * The lists hold each block's offset and end rather than its number, and all lists of a
 * kind share one array, laid out before the first block is placed (every block that may
 * come is counted): a query reads neighbouring memory, so a million blocks cost little
 * more per block than a thousand, though they come in no order of time. The room is taken
 * in every candidate place of a block, not only the one it ends in: 16 bytes per list it
 * would join (about 5 for a block living a few sections, 2 log2(sections) at most, and
 * log2(sections) indices more where `starts` is kept), freed when the pass ends. */

#define NARROW 32 /* sections a query walks leaf by leaf rather than through `starts` */

typedef struct { i64 offset, end; } span;

/* Lists in one array, in the order of their numbers: list k holds len[k] items from
 * start[k] (its room ends at start[k + 1]). */
typedef struct { span *items; int *start, *len; } lists;
typedef struct { int *items; int *start, *len; } index_lists;

typedef struct { lists cover, leaf; index_lists starts; int leaves, wide; } packer;

/* The nodes of a segment tree of `leaves` leaves that tile sections [a, b), into `node`
 * (room for 64); returns how many. */
static int tiles(int leaves, int a, int b, int *node) {
    int count = 0;
    for (int lo = a + leaves, hi = b + leaves; lo < hi; lo /= 2, hi /= 2) {
        if (lo & 1) node[count++] = lo++;
        if (hi & 1) node[count++] = --hi;
    }
    return count;
}

static int *counts(size_t lists) { return calloc(lists + 1, sizeof(int)); }

/* Room for every block that has `place` among its candidates, counted first and then laid
 * out. `wide`: some block spans more than NARROW sections, so `starts` is kept. */
static int packer_init(packer *p, int sections, int wide, int n, const int *a, const int *b,
                       const int *cand_start, const int *places, int place) {
    int node[64];
    p->leaves = 1;
    while (p->leaves < sections) p->leaves *= 2;
    p->wide = wide;
    size_t nodes = 2 * (size_t)p->leaves, leaves = (size_t)p->leaves;
    p->cover.start = counts(nodes), p->cover.len = counts(nodes);
    p->leaf.start = counts(leaves), p->leaf.len = counts(leaves);
    p->starts.start = counts(leaves), p->starts.len = counts(leaves);
    if (!p->cover.start || !p->cover.len || !p->leaf.start || !p->leaf.len ||
        !p->starts.start || !p->starts.len)
        return -1;
    for (int i = 0; i < n; i++) { /* how many items each list may get, in start[k + 1] */
        int mine = 0;
        for (int k = cand_start[i]; k < cand_start[i + 1]; k++) mine |= places[k] == place;
        if (!mine) continue;
        p->leaf.start[a[i] + 1]++;
        for (int k = tiles(p->leaves, a[i], b[i], node); k-- > 0;) p->cover.start[node[k] + 1]++;
        for (int up = (a[i] + p->leaves) / 2; wide && up >= 1; up /= 2) p->starts.start[up + 1]++;
    }
    for (size_t k = 0; k < nodes; k++) p->cover.start[k + 1] += p->cover.start[k];
    for (size_t k = 0; k < leaves; k++) p->leaf.start[k + 1] += p->leaf.start[k];
    for (size_t k = 0; k < leaves; k++) p->starts.start[k + 1] += p->starts.start[k];
    p->cover.items = malloc(sizeof(span) * ((size_t)p->cover.start[nodes] + 1));
    p->leaf.items = malloc(sizeof(span) * ((size_t)p->leaf.start[leaves] + 1));
    p->starts.items = malloc(sizeof(int) * ((size_t)p->starts.start[leaves] + 1));
    return p->cover.items && p->leaf.items && p->starts.items ? 0 : -1;
}

static void packer_free(packer *p) {
    free(p->cover.items), free(p->cover.start), free(p->cover.len);
    free(p->leaf.items), free(p->leaf.start), free(p->leaf.len);
    free(p->starts.items), free(p->starts.start), free(p->starts.len);
}

static void push(lists *l, int k, i64 offset, i64 end) {
    span *s = &l->items[l->start[k] + l->len[k]++];
    s->offset = offset;
    s->end = end;
}

static void packer_add(packer *p, int block, int a, int b, i64 offset, i64 end) {
    int node[64];
    push(&p->leaf, a, offset, end);
    for (int k = tiles(p->leaves, a, b, node); k-- > 0;) push(&p->cover, node[k], offset, end);
    for (int up = (a + p->leaves) / 2; p->wide && up >= 1; up /= 2)
        p->starts.items[p->starts.start[up] + p->starts.len[up]++] = block;
}

/* The spans of list k appended to `*buf` (of `*cap` spans, `len` used, grown if need be):
 * the new length, or -1 without memory. */
static int gather(span **buf, int *cap, int len, const lists *l, int k) {
    int more = l->len[k];
    if (len + more > *cap) {
        int grown = 2 * (len + more);
        span *bigger = realloc(*buf, sizeof(span) * (size_t)grown);
        if (!bigger) return -1;
        *buf = bigger;
        *cap = grown;
    }
    if (more) memcpy(*buf + len, l->items + l->start[k], sizeof(span) * (size_t)more);
    return len + more;
}

/* The same for the blocks that `starts` node k holds by number. */
static int gather_blocks(span **buf, int *cap, int len, const index_lists *l, int k,
                         const i64 *offset, const i64 *size) {
    int more = l->len[k];
    if (len + more > *cap) {
        int grown = 2 * (len + more);
        span *bigger = realloc(*buf, sizeof(span) * (size_t)grown);
        if (!bigger) return -1;
        *buf = bigger;
        *cap = grown;
    }
    for (int m = 0; m < more; m++) {
        int j = l->items[l->start[k] + m];
        (*buf)[len + m].offset = offset[j];
        (*buf)[len + m].end = offset[j] + size[j];
    }
    return len + more;
}

/* Spans in order of offset (the order among equal offsets does not change a first fit):
 * a quicksort on the median of three, insertion sort below 16. */
static void sort_spans(span *s, int n) {
    while (n > 16) {
        i64 x = s[0].offset, y = s[n / 2].offset, z = s[n - 1].offset;
        i64 pivot = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
        int i = 0, j = n - 1;
        for (;;) {
            while (s[i].offset < pivot) i++;
            while (s[j].offset > pivot) j--;
            if (i >= j) break;
            span t = s[i];
            s[i++] = s[j];
            s[j--] = t;
        }
        /* s[0..j] <= pivot <= s[j+1..n): the smaller side recursively, the larger here */
        if (j + 1 < n - j - 1) {
            sort_spans(s, j + 1);
            s += j + 1;
            n -= j + 1;
        } else {
            sort_spans(s + j + 1, n - j - 1);
            n = j + 1;
        }
    }
    for (int i = 1; i < n; i++) {
        span t = s[i];
        int k = i;
        for (; k > 0 && s[k - 1].offset > t.offset; k--) s[k] = s[k - 1];
        s[k] = t;
    }
}

/* The lowest offset aligned to `align` where `size` bytes overlap none of the placed
 * blocks that conflict with [a, b); -1 without memory. */
static i64 packer_fit(const packer *p, int a, int b, i64 size, i64 align, const i64 *offset,
                      const i64 *sizes, span **buf, int *cap) {
    int len = 0;
    for (int node = a + p->leaves; node >= 1 && len >= 0; node /= 2)
        len = gather(buf, cap, len, &p->cover, node);
    if (b - a - 1 <= NARROW || !p->wide) {
        for (int k = a + 1; k < b && len >= 0; k++) len = gather(buf, cap, len, &p->leaf, k);
    } else {
        int node[64];
        for (int k = tiles(p->leaves, a + 1, b, node); k-- > 0 && len >= 0;)
            len = node[k] >= p->leaves
                      ? gather(buf, cap, len, &p->leaf, node[k] - p->leaves)
                      : gather_blocks(buf, cap, len, &p->starts, node[k], offset, sizes);
    }
    if (len < 0) return -1;
    sort_spans(*buf, len);
    i64 cursor = 0;
    for (int k = 0; k < len; k++) {
        if (cursor + size <= (*buf)[k].offset) break;
        i64 above = align_up((*buf)[k].end, align);
        if (above > cursor) cursor = above;
    }
    return cursor;
}

/*
 * Places blocks one by one in `order`, each in the first of its candidate places where the
 * first fit ends within that place's capacity (capacity < 0: unbounded). Candidates of
 * block i: places[cand_start[i] .. cand_start[i + 1]). Writes the chosen place (-1: none
 * holds it) and offset of every block, and for every candidate tried the end its first
 * fit would have had (ends[k], -1 where not tried). Returns how many blocks fit nowhere,
 * or -1 without memory.
 */
int mp_assign(int n, const i64 *size, const i64 *first, const i64 *last, const i64 *align,
              const int *order, const int *cand_start, const int *places, int nplaces,
              const i64 *capacity, int *chosen, i64 *offset, i64 *ends) {
    int result = 0, cap = 0, wide = 0;
    span *buf = NULL;
    int *a = malloc(sizeof(int) * (size_t)(n + 1)), *b = malloc(sizeof(int) * (size_t)(n + 1));
    packer *packers = calloc((size_t)(nplaces > 0 ? nplaces : 1), sizeof(packer));
    if (!a || !b || !packers) { result = -1; goto done; }
    int sections = cut_sections(n, first, last, a, b);
    if (sections < 0) { result = -1; goto done; }
    for (int i = 0; i < n; i++) wide |= b[i] - a[i] - 1 > NARROW;
    for (int p = 0; p < nplaces; p++)
        if (packer_init(&packers[p], sections > 0 ? sections : 1, wide, n, a, b, cand_start,
                        places, p)) { result = -1; goto done; }
    for (int k = 0; k < cand_start[n]; k++) ends[k] = -1;
    for (int i = 0; i < n; i++) chosen[i] = -1;
    for (int t = 0; t < n && result >= 0; t++) {
        int i = order[t];
        for (int k = cand_start[i]; k < cand_start[i + 1]; k++) {
            packer *p = &packers[places[k]];
            i64 at = packer_fit(p, a[i], b[i], size[i], align[i], offset, size, &buf, &cap);
            if (at < 0) { result = -1; break; }
            ends[k] = at + size[i];
            if (capacity[places[k]] < 0 || ends[k] <= capacity[places[k]]) {
                chosen[i] = places[k];
                offset[i] = at;
                packer_add(p, i, a[i], b[i], at, at + size[i]);
                break;
            }
        }
        if (chosen[i] < 0 && result >= 0) result++;
    }
done:
    for (int p = 0; packers && p < nplaces; p++) packer_free(&packers[p]);
    free(packers);
    free(buf);
    free(a);
    free(b);
    return result;
}


/* ------------------------------------------------------------------------------------- */
/*
 * The exact search: is there a placement whose peak is at most `target`?
 *
 * It builds canonical placements only: blocks are placed in non-decreasing order of
 * offset (ties broken by `rank`), each at its lowest offset given the blocks placed so far
 * (`minoff`, the aligned top of its highest placed neighbour in time). Every feasible
 * instance has such a placement, so exhausting them proves infeasibility. Pruning:
 *  - dominance: a block is never placed at or above the top some other unplaced block
 *    would have at its own lowest offset (that block fits in the gap below, which a
 *    placement with a smaller sum of offsets uses);
 *  - sections: in every section, the unplaced blocks covering it are stacked above its
 *    floor (the lowest offset any of them can take, and never below the current offset),
 *    so floor + their total size must stay within the target;
 *  - decomposition: once no unplaced block crosses a section boundary, the two sides are
 *    independent and are searched one after the other, without backtracking across.
 * The search counts nodes and stops at `node_limit`, or at the time limit.
 */

/* `data`, an array of `cap` items of `item` bytes, grown if need be to hold `need` items
 * (with as many again to spare): the array, perhaps moved, or NULL when out of memory
 * (then `data` and `cap` are as they were). */
static void *room(void *data, long *cap, long need, size_t item) {
    if (need <= *cap) return data;
    long grown = 2 * need + 256;
    void *more = realloc(data, item * (size_t)grown);
    if (more) *cap = grown;
    return more;
}

typedef struct { i64 *where; i64 old; } undo;

/* What a search changed, newest last, so that it can undo back to a mark. */
typedef struct { undo *entries; long len, cap; } undo_log;

/* Sets *where to value and logs the old value; -1 (and nothing set) when out of memory. */
static int log_set(undo_log *log, i64 *where, i64 value) {
    undo *entries = room(log->entries, &log->cap, log->len + 1, sizeof *entries);
    if (!entries) return -1;
    log->entries = entries;
    log->entries[log->len].where = where;
    log->entries[log->len].old = *where;
    log->len++;
    *where = value;
    return 0;
}

static void log_rollback(undo_log *log, long mark) {
    while (log->len > mark) {
        log->len--;
        *log->entries[log->len].where = log->entries[log->len].old;
    }
}
typedef struct { i64 offset, rank; int block; } cand;
typedef struct { i64 key[3]; int block; } keyed;

typedef struct {
    int n, m;
    const i64 *size, *align, *width;
    const char *heuristic;
    uint64_t rng; /* seeded noise on the first key of the order; 0: none */
    i64 *rank;
    int *a, *b;
    int *ov_start, *ov;   /* blocks overlapping each block in time */
    int *sec_start, *sec; /* blocks covering each section */
    i64 *off, *minoff, *floor, *total, *cuts, *sol;
    int *stamp, *touched, stamp_now;
    undo_log log;
    int *ints;
    long ints_len, ints_cap;
    cand *cands;
    long cands_len, cands_cap;
    i64 target, nodes, node_limit;
    i64 tries; /* placements tried, counted for the clock */
    double deadline;
    int failed; /* out of memory */
} search;

static void set(search *s, i64 *where, i64 value) {
    if (log_set(&s->log, where, value)) s->failed = 1;
}

static void rollback(search *s, long mark) { log_rollback(&s->log, mark); }

/* Room for `count` more ints on the arena stack; returns where they start, or -1. */
static long ints_push(search *s, long count) {
    int *ints = room(s->ints, &s->ints_cap, s->ints_len + count, sizeof *ints);
    if (!ints) { s->failed = 1; return -1; }
    s->ints = ints;
    long at = s->ints_len;
    s->ints_len += count;
    return at;
}

static long cands_push(search *s, long count) {
    cand *cands = room(s->cands, &s->cands_cap, s->cands_len + count, sizeof *cands);
    if (!cands) { s->failed = 1; return -1; }
    s->cands = cands;
    long at = s->cands_len;
    s->cands_len += count;
    return at;
}

static int cmp_cand(const void *x, const void *y) {
    const cand *p = x, *q = y;
    if (p->offset != q->offset) return (p->offset > q->offset) - (p->offset < q->offset);
    return (p->rank > q->rank) - (p->rank < q->rank);
}

/* Puts block c at x and updates what follows from it; 0 when some section can no longer
 * take its unplaced blocks. `alone` tells whether c has no unplaced neighbour in time.
 * The caller has checked every section against x already (see `node`), so only the
 * sections whose floor this placement lifts need a look. */
static int place(search *s, int c, i64 x, int *alone) {
    i64 top = x + s->size[c];
    set(s, &s->off[c], x);
    s->sol[c] = x;
    *alone = 1;
    for (int k = s->ov_start[c]; k < s->ov_start[c + 1] && *alone; k++)
        if (s->off[s->ov[k]] < 0) *alone = 0;
    if (top > s->target) return 0;
    for (int q = s->a[c]; q < s->b[c]; q++) {
        set(s, &s->floor[q], top);
        set(s, &s->total[q], s->total[q] - s->size[c]);
    }
    int touched = 0;
    s->stamp_now++;
    for (int k = s->ov_start[c]; k < s->ov_start[c + 1]; k++) {
        int j = s->ov[k];
        if (s->off[j] >= 0) continue;
        i64 lowest = align_up(top, s->align[j]);
        if (s->minoff[j] >= lowest) continue;
        set(s, &s->minoff[j], lowest);
        for (int q = s->a[j]; q < s->b[j]; q++) {
            if (s->stamp[q] == s->stamp_now) continue;
            s->stamp[q] = s->stamp_now;
            s->touched[touched++] = q;
        }
    }
    for (int t = 0; t < touched; t++) {
        int q = s->touched[t];
        if (s->total[q] == 0) continue;
        /* The floor never exceeds the lowest offset of an unplaced block in the section,
         * so the scan can stop at the first block that sits on it. */
        i64 lowest = INT64_MAX;
        for (int k = s->sec_start[q]; k < s->sec_start[q + 1] && lowest > s->floor[q]; k++) {
            int j = s->sec[k];
            if (s->off[j] < 0 && s->minoff[j] < lowest) lowest = s->minoff[j];
        }
        if (lowest > s->floor[q]) set(s, &s->floor[q], lowest);
        if (s->floor[q] + s->total[q] > s->target) return 0;
    }
    return !s->failed;
}

static int node(search *s, long part, int len, int s0, int s1, i64 last_off, i64 last_rank);

static int cmp_keyed(const void *x, const void *y) {
    const keyed *p = x, *q = y;
    for (int k = 0; k < 3; k++)
        if (p->key[k] != q->key[k]) return p->key[k] < q->key[k] ? 1 : -1;
    return (p->block > q->block) - (p->block < q->block);
}

/* Ranks the blocks of a part by the heuristic's three keys, largest first: W the width of
 * its lifetime in steps, A its area (size times width), Z its size, T the largest total of
 * the unplaced blocks in any of its sections (which changes as the search goes on). A
 * seeded search raises each block's first key by a random 0 to NOISE thousandths. */
static int rerank(search *s, long part, int len) {
    keyed *keys = malloc(sizeof(keyed) * (size_t)(len > 0 ? len : 1));
    if (!keys) { s->failed = 1; return -1; }
    for (int t = 0; t < len; t++) {
        int i = s->ints[part + t];
        keys[t].block = i;
        for (int k = 0; k < 3; k++) {
            i64 value = 0;
            switch (s->heuristic[k]) {
            case 'W': value = s->width[i]; break;
            case 'A': value = s->width[i] * s->size[i]; break;
            case 'Z': value = s->size[i]; break;
            default:
                for (int q = s->a[i]; q < s->b[i]; q++)
                    if (s->total[q] > value) value = s->total[q];
            }
            keys[t].key[k] = value;
        }
        if (s->rng) {
            i64 draw = (i64)(xorshift(&s->rng) % (NOISE + 1)), key = keys[t].key[0];
            int small = key < INT64_MAX / 1000 / (NOISE + 1); /* key * draw cannot overflow */
            keys[t].key[0] += small ? key * draw / 1000 : key / 1000 * draw;
        }
    }
    qsort(keys, (size_t)len, sizeof(keyed), cmp_keyed);
    for (int t = 0; t < len; t++) set(s, &s->rank[keys[t].block], t);
    free(keys);
    return s->failed ? -1 : 0;
}

/* Searches each side of the boundaries in `splits` (sections where a part starts). */
static int decompose(search *s, long part, int len, int s0, int s1, long splits, int count) {
    int status = FOUND;
    for (int p = 0; p <= count && status == FOUND; p++) {
        int r0 = p == 0 ? s0 : s->ints[splits + p - 1];
        int r1 = p == count ? s1 : s->ints[splits + p];
        long sub = ints_push(s, len);
        if (sub < 0) return NO_MEMORY;
        int sublen = 0;
        for (int t = 0; t < len; t++) {
            int i = s->ints[part + t];
            if (s->off[i] < 0 && s->a[i] < r1 && s->b[i] > r0) s->ints[sub + sublen++] = i;
        }
        if (sublen > 0)
            status = rerank(s, sub, sublen) ? NO_MEMORY : node(s, sub, sublen, r0, r1, -1, -1);
        s->ints_len = sub;
    }
    return status;
}

static int node(search *s, long part, int len, int s0, int s1, i64 last_off, i64 last_rank) {
    if (s->failed) return NO_MEMORY;
    if (++s->nodes > s->node_limit) return NODE_LIMIT;
    if ((s->nodes & 1023) == 0 && now_seconds() > s->deadline) return TIME_LIMIT;
    long base = s->ints_len;
    long cbase = cands_push(s, len);
    if (cbase < 0) return NO_MEMORY;
    int unplaced = 0, count = 0;
    i64 lowest_top = INT64_MAX;
    for (int t = 0; t < len; t++) {
        int i = s->ints[part + t];
        if (s->off[i] >= 0) continue;
        unplaced++;
        if (s->minoff[i] + s->size[i] < lowest_top) lowest_top = s->minoff[i] + s->size[i];
    }
    int status = unplaced == 0 ? FOUND : INFEASIBLE;
    for (int t = 0; t < len && unplaced > 0; t++) {
        int i = s->ints[part + t];
        i64 x = s->minoff[i];
        if (s->off[i] >= 0 || x >= lowest_top) continue;
        if (x < last_off || (x == last_off && s->rank[i] < last_rank)) continue;
        s->cands[cbase + count].offset = x;
        s->cands[cbase + count].rank = s->rank[i];
        s->cands[cbase + count].block = i;
        count++;
    }
    qsort(s->cands + cbase, (size_t)count, sizeof(cand), cmp_cand);
    /* Cheap necessary conditions for `place` to pass: every section's total fits above x,
     * and the block covers every section already too full to take all of it above its
     * floor (placing the block lifts the floor only where it lies). */
    i64 fullest = 0;
    int over_lo = s1, over_hi = -1;
    for (int q = s0; q < s1; q++) {
        if (s->total[q] > fullest) fullest = s->total[q];
        if (s->total[q] > 0 && s->floor[q] + s->total[q] > s->target) {
            if (q < over_lo) over_lo = q;
            over_hi = q;
        }
    }
    for (int t = 0; t < count && status == INFEASIBLE; t++) {
        int c = s->cands[cbase + t].block;
        i64 x = s->cands[cbase + t].offset;
        if (x + fullest > s->target) break;
        if (over_hi >= 0 && (s->a[c] > over_lo || s->b[c] <= over_hi)) continue;
        /* One node can try thousands of placements when thousands of blocks meet in time,
         * so the clock is read every few placements too, not only every 1024 nodes. */
        if ((++s->tries & 63) == 0 && now_seconds() > s->deadline) {
            status = TIME_LIMIT;
            break;
        }
        long mark = s->log.len;
        int alone;
        if (place(s, c, x, &alone)) {
            long splits = s->ints_len;
            int nsplits = 0;
            for (int q = s->a[c]; q + 1 < s->b[c]; q++) {
                set(s, &s->cuts[q], s->cuts[q] - 1);
                if (s->cuts[q] == 0 && q >= s0 && q + 1 < s1) {
                    long at = ints_push(s, 1);
                    if (at < 0) break;
                    s->ints[at] = q + 1;
                    nsplits++;
                }
            }
            if (s->failed) status = NO_MEMORY;
            else if (nsplits == 0) status = node(s, part, len, s0, s1, x, s->rank[c]);
            else status = decompose(s, part, len, s0, s1, splits, nsplits);
            s->ints_len = splits;
        }
        rollback(s, mark);
        if (s->failed) status = NO_MEMORY;
        /* A block with no unplaced neighbour in time changes nothing for the others: if
         * nothing fits after placing it, nothing fits after any other choice either. */
        if (alone || status == NODE_LIMIT || status == TIME_LIMIT || status == NO_MEMORY) break;
    }
    s->ints_len = base;
    s->cands_len = cbase;
    return status;
}

static int cmp_pair(const void *x, const void *y) {
    const int *p = x, *q = y;
    if (p[0] != q[0]) return (p[0] > q[0]) - (p[0] < q[0]);
    return (p[1] > q[1]) - (p[1] < q[1]);
}

static int prepare(search *s, const i64 *first, const i64 *last) {
    int n = s->n;
    s->a = malloc(sizeof(int) * (size_t)(n + 1));
    s->b = malloc(sizeof(int) * (size_t)(n + 1));
    if (!s->a || !s->b) return -1;
    s->m = cut_sections(n, first, last, s->a, s->b);
    int m = s->m;
    if (m < 0) return -1;
    /* Overlaps, from the blocks sorted by first section. */
    int *by_start = malloc(sizeof(int) * 2 * (size_t)(n + 1));
    s->ov_start = calloc((size_t)(n + 1), sizeof(int));
    if (!by_start || !s->ov_start) { free(by_start); return -1; }
    for (int i = 0; i < n; i++) { by_start[2 * i] = s->a[i]; by_start[2 * i + 1] = i; }
    qsort(by_start, (size_t)n, 2 * sizeof(int), cmp_pair);
    long pairs = 0;
    for (int p = 0; p < n; p++)
        for (int q = p + 1; q < n && by_start[2 * q] < s->b[by_start[2 * p + 1]]; q++) pairs++;
    s->ov = malloc(sizeof(int) * (size_t)(2 * pairs + 1));
    int *fill = calloc((size_t)(n + 1), sizeof(int));
    if (!s->ov || !fill) { free(by_start); free(fill); return -1; }
    for (int p = 0; p < n; p++)
        for (int q = p + 1; q < n && by_start[2 * q] < s->b[by_start[2 * p + 1]]; q++) {
            s->ov_start[by_start[2 * p + 1] + 1]++;
            s->ov_start[by_start[2 * q + 1] + 1]++;
        }
    for (int i = 0; i < n; i++) s->ov_start[i + 1] += s->ov_start[i];
    for (int p = 0; p < n; p++)
        for (int q = p + 1; q < n && by_start[2 * q] < s->b[by_start[2 * p + 1]]; q++) {
            int i = by_start[2 * p + 1], j = by_start[2 * q + 1];
            s->ov[s->ov_start[i] + fill[i]++] = j;
            s->ov[s->ov_start[j] + fill[j]++] = i;
        }
    free(by_start);
    free(fill);
    /* Blocks covering each section, section totals and boundary cuts. */
    s->sec_start = calloc((size_t)(m + 1), sizeof(int));
    s->total = calloc((size_t)(m + 1), sizeof(i64));
    s->floor = calloc((size_t)(m + 1), sizeof(i64));
    s->cuts = calloc((size_t)(m + 1), sizeof(i64));
    s->stamp = calloc((size_t)(m + 1), sizeof(int));
    s->touched = calloc((size_t)(m + 1), sizeof(int));
    if (!s->sec_start || !s->total || !s->floor || !s->cuts || !s->stamp || !s->touched)
        return -1;
    long covered = 0;
    for (int i = 0; i < n; i++) {
        covered += s->b[i] - s->a[i];
        for (int q = s->a[i]; q < s->b[i]; q++) {
            s->sec_start[q + 1]++;
            s->total[q] += s->size[i];
        }
        for (int q = s->a[i]; q + 1 < s->b[i]; q++) s->cuts[q]++;
    }
    for (int q = 0; q < m; q++) s->sec_start[q + 1] += s->sec_start[q];
    s->sec = malloc(sizeof(int) * (size_t)(covered + 1));
    int *seen = calloc((size_t)(m + 1), sizeof(int));
    if (!s->sec || !seen) { free(seen); return -1; }
    for (int i = 0; i < n; i++)
        for (int q = s->a[i]; q < s->b[i]; q++) s->sec[s->sec_start[q] + seen[q]++] = i;
    free(seen);
    s->off = malloc(sizeof(i64) * (size_t)(n + 1));
    s->minoff = calloc((size_t)(n + 1), sizeof(i64));
    if (!s->off || !s->minoff) return -1;
    for (int i = 0; i < n; i++) s->off[i] = -1;
    return 0;
}

static void release(search *s) {
    free(s->a); free(s->b); free(s->ov_start); free(s->ov); free(s->sec_start); free(s->sec);
    free(s->off); free(s->minoff); free(s->floor); free(s->total); free(s->cuts);
    free(s->stamp); free(s->touched); free(s->log.entries); free(s->ints); free(s->cands);
}

/*
 * Searches for offsets whose peak is at most `target`. Returns FOUND (offsets written),
 * INFEASIBLE (proven: no placement fits `target`), NODE_LIMIT, TIME_LIMIT or NO_MEMORY;
 * `nodes` receives the number of search nodes visited.
 */
int mp_search(int n, const i64 *size, const i64 *first, const i64 *last, const i64 *align,
              const char *heuristic, i64 seed, i64 target, i64 node_limit, double seconds,
              i64 *offset, i64 *nodes) {
    search s;
    int status = FOUND;
    memset(&s, 0, sizeof s);
    s.n = n;
    s.size = size;
    s.align = align;
    s.heuristic = heuristic;
    s.rng = seed ? SEED_MIX ^ (uint64_t)seed : 0;
    s.rank = calloc((size_t)(n + 1), sizeof(i64));
    i64 *width = malloc(sizeof(i64) * (size_t)(n + 1));
    if (!s.rank || !width) status = NO_MEMORY;
    for (int i = 0; i < n && width; i++) width[i] = last[i] - first[i] + 1;
    s.width = width;
    s.sol = offset;
    s.target = target;
    s.node_limit = node_limit;
    s.deadline = now_seconds() + seconds;
    if (status == FOUND && prepare(&s, first, last)) status = NO_MEMORY;
    for (int q = 0; q < s.m && status == FOUND; q++)
        if (s.total[q] > target) status = INFEASIBLE;
    /* Each stretch of time between boundaries no block crosses is searched on its own. */
    int start = 0;
    for (int q = 0; q < s.m && status == FOUND; q++) {
        if (q + 1 < s.m && s.cuts[q] > 0) continue;
        long part = ints_push(&s, n);
        if (part < 0) { status = NO_MEMORY; break; }
        int len = 0;
        for (int i = 0; i < n; i++)
            if (s.a[i] >= start && s.b[i] <= q + 1) s.ints[part + len++] = i;
        if (len > 0)
            status = rerank(&s, part, len) ? NO_MEMORY : node(&s, part, len, start, q + 1, -1, -1);
        s.ints_len = part;
        start = q + 1;
    }
    *nodes = s.nodes;
    free(width);
    free(s.rank);
    release(&s);
    return status;
}

/* ------------------------------------------------------------------------------------- */
/* The skyline search: a depth-first search that fills holes of the skyline, for finding
 * placements (never for proofs: its "leave the hole empty" move is not exhaustive).
 *
 * The skyline is, per section, the level below which everything is decided (`top`). A
 * hole is a run of sections at one level with higher sections (or the ends of time) on
 * both sides. The byte just above a hole's leftmost section is either the bottom of a
 * block that starts in that section and fits inside the hole (the blocks placed there
 * rest on the hole's floor), or it stays empty: then the hole is raised to its lower
 * neighbour (wasting the bytes in between). Each node takes the hole with the fewest
 * moves (a hole with none fails at once, wherever it is) and tries its blocks best fit
 * first: the block that ends where the hole ends, then the one whose top meets a
 * neighbour's level, then the widest, then the largest; leaving it empty last.
 *
 * Bound: every section keeps room for the unplaced blocks that cross it (`rem`): the
 * level plus `rem` stays within the target. A section with nothing left to place is
 * closed (a wall). With zero slack (a perfect packing, where every section is full at
 * the target) no hole may stay empty, and the search is then complete. `seed` != 0 adds
 * seeded noise to the order of the moves, for restarts. */

#define SKY_CLOSED INT64_MAX

typedef struct {
    int n, m;
    const i64 *size, *align;
    int *a, *b;
    int *start_at, *starts; /* blocks by first section: starts[start_at[q] .. start_at[q+1]) */
    i64 *top, *rem, *off, *sol, *length;
    i64 target, nodes, node_limit;
    double deadline;
    undo_log log;
    int *moves;
    long moves_len, moves_cap;
    uint64_t rng;
    int noisy, failed;
} sky;

static void sky_set(sky *s, i64 *where, i64 value) {
    if (log_set(&s->log, where, value)) s->failed = 1;
}

static void sky_rollback(sky *s, long mark) { log_rollback(&s->log, mark); }

static uint64_t sky_random(sky *s) { return xorshift(&s->rng); }

/* The level of section q as a neighbour: a closed section or the end of time is a wall. */
static i64 sky_level(const sky *s, int q) { return q < 0 || q >= s->m ? SKY_CLOSED : s->top[q]; }

/* Where block c (starting at the hole's leftmost section) goes: at the aligned top of the
 * highest section it crosses, if that leaves room for what crosses its sections; -1 if
 * not. `waste` receives the bytes times steps left empty below it. */
static i64 sky_offset(const sky *s, int c, i64 *waste) {
    if (s->off[c] >= 0) return -1;
    i64 x = 0;
    for (int q = s->a[c]; q < s->b[c]; q++)
        if (s->top[q] > x) x = s->top[q];
    x = align_up(x, s->align[c]);
    i64 empty = 0;
    for (int q = s->a[c]; q < s->b[c]; q++) {
        if (x + s->rem[q] > s->target) return -1;
        empty += (x - s->top[q]) * s->length[q];
    }
    *waste = empty;
    return x;
}

/* The level an empty hole rises to (its lower neighbour), or -1 when it cannot rise. */
static i64 sky_raise(const sky *s, int h0, int h1) {
    i64 left = sky_level(s, h0 - 1), right = sky_level(s, h1);
    i64 up = left < right ? left : right;
    if (up == SKY_CLOSED) return -1;
    for (int q = h0; q < h1; q++)
        if (up + s->rem[q] > s->target) return -1;
    return up;
}

static long sky_push(sky *s, long count) {
    int *moves = room(s->moves, &s->moves_cap, s->moves_len + count, sizeof *moves);
    if (!moves) { s->failed = 1; return -1; }
    s->moves = moves;
    long at = s->moves_len;
    s->moves_len += count;
    return at;
}

typedef struct { i64 waste, fit, width, size; int block; } sky_key;

static int sky_before(const sky_key *p, const sky_key *q) {
    if (p->waste != q->waste) return p->waste < q->waste;
    if (p->fit != q->fit) return p->fit > q->fit;
    if (p->width != q->width) return p->width > q->width;
    return p->size > q->size;
}

static int sky_node(sky *s) {
    if (s->failed) return NO_MEMORY;
    if (++s->nodes > s->node_limit) return NODE_LIMIT;
    if ((s->nodes & 1023) == 0 && now_seconds() > s->deadline) return TIME_LIMIT;
    /* The leftmost hole with one move, else the leftmost hole. */
    int best0 = -1, best1 = -1, best_moves = INT32_MAX;
    for (int q = 0; q < s->m;) {
        i64 level = s->top[q];
        int e = q + 1;
        while (e < s->m && s->top[e] == level) e++;
        if (level != SKY_CLOSED && sky_level(s, q - 1) > level && sky_level(s, e) > level) {
            /* moves, counted up to two: a forced hole comes first, else the leftmost */
            int moves = sky_raise(s, q, e) >= 0;
            i64 waste;
            for (int k = s->start_at[q]; k < s->start_at[q + 1] && moves < 2; k++)
                moves += sky_offset(s, s->starts[k], &waste) >= 0;
            if (moves == 0) return INFEASIBLE;
            if (moves < best_moves) best0 = q, best1 = e, best_moves = moves;
        }
        q = e;
    }
    if (best0 < 0) return FOUND;
    int h0 = best0, h1 = best1;
    int room = s->start_at[h0 + 1] - s->start_at[h0];
    long base = sky_push(s, room);
    if (base < 0) return NO_MEMORY;
    /* Best fit first: the least waste below the block, then a block that ends where the
     * hole ends, then one whose top meets a neighbour's level, then the widest, then the
     * largest; equal keys keep the caller's order of the blocks. */
    i64 left = sky_level(s, h0 - 1), right = sky_level(s, h1);
    int count = 0;
    sky_key *keys = malloc(sizeof(sky_key) * (size_t)(room + 1));
    if (!keys) { s->failed = 1; return NO_MEMORY; }
    for (int k = s->start_at[h0]; k < s->start_at[h0 + 1]; k++) {
        int c = s->starts[k];
        sky_key key;
        i64 x = sky_offset(s, c, &key.waste);
        if (x < 0) continue;
        i64 up = x + s->size[c];
        key.fit = (s->b[c] == h1) * 4 + (up == left || up == right) * 2;
        if (s->noisy && sky_random(s) % 4 == 0) key.fit += (i64)(sky_random(s) % 6);
        key.width = s->b[c] - s->a[c];
        key.size = s->size[c];
        key.block = c;
        int at = count++;
        while (at > 0 && sky_before(&key, &keys[at - 1])) {
            keys[at] = keys[at - 1];
            at--;
        }
        keys[at] = key;
    }
    for (int t = 0; t < count; t++) s->moves[base + t] = keys[t].block;
    free(keys);
    int status = INFEASIBLE;
    for (int t = 0; t < count && status == INFEASIBLE; t++) {
        int c = s->moves[base + t];
        long mark = s->log.len;
        i64 waste, x = sky_offset(s, c, &waste);
        sky_set(s, &s->off[c], x);
        s->sol[c] = x;
        for (int q = s->a[c]; q < s->b[c]; q++) {
            sky_set(s, &s->rem[q], s->rem[q] - s->size[c]);
            sky_set(s, &s->top[q], s->rem[q] == 0 ? SKY_CLOSED : x + s->size[c]);
        }
        status = s->failed ? NO_MEMORY : sky_node(s);
        sky_rollback(s, mark);
    }
    if (status == INFEASIBLE) {
        i64 up = sky_raise(s, h0, h1);
        if (up >= 0) {
            long mark = s->log.len;
            for (int q = h0; q < h1; q++) sky_set(s, &s->top[q], up);
            status = s->failed ? NO_MEMORY : sky_node(s);
            sky_rollback(s, mark);
        }
    }
    s->moves_len = base;
    return status;
}

/*
 * Looks for offsets whose peak is at most `target` by filling the skyline's holes (above).
 * Returns FOUND (offsets written), INFEASIBLE (this search found none: no proof),
 * NODE_LIMIT, TIME_LIMIT or NO_MEMORY; `nodes` receives the nodes visited.
 */
int mp_skyline(int n, const i64 *size, const i64 *first, const i64 *last, const i64 *align,
               i64 target, i64 seed, i64 node_limit, double seconds, i64 *offset, i64 *nodes) {
    sky s;
    memset(&s, 0, sizeof s);
    s.n = n;
    s.size = size;
    s.align = align;
    s.sol = offset;
    s.target = target;
    s.node_limit = node_limit;
    s.deadline = now_seconds() + seconds;
    s.noisy = seed != 0;
    s.rng = SEED_MIX ^ (uint64_t)seed;
    int status = FOUND;
    s.a = malloc(sizeof(int) * (size_t)(n + 1));
    s.b = malloc(sizeof(int) * (size_t)(n + 1));
    s.off = malloc(sizeof(i64) * (size_t)(n + 1));
    if (!s.a || !s.b || !s.off) status = NO_MEMORY;
    if (status == FOUND) s.m = cut_sections(n, first, last, s.a, s.b);
    if (s.m < 0) status = NO_MEMORY;
    int m = s.m > 0 ? s.m : 0;
    s.start_at = calloc((size_t)(m + 2), sizeof(int));
    s.starts = malloc(sizeof(int) * (size_t)(n + 1));
    s.top = calloc((size_t)(m + 1), sizeof(i64));
    s.rem = calloc((size_t)(m + 1), sizeof(i64));
    s.length = calloc((size_t)(m + 1), sizeof(i64));
    if (!s.start_at || !s.starts || !s.top || !s.rem || !s.length) status = NO_MEMORY;
    if (status == FOUND) {
        for (int i = 0; i < n; i++) {
            s.off[i] = -1;
            s.start_at[s.a[i] + 1]++;
            for (int q = s.a[i]; q < s.b[i]; q++) s.rem[q] += size[i];
        }
        for (int q = 0; q < m; q++) s.start_at[q + 1] += s.start_at[q];
        if (section_lengths(n, first, last, s.length)) status = NO_MEMORY;
        int *fill = calloc((size_t)(m + 1), sizeof(int));
        if (!fill) status = NO_MEMORY;
        /* Blocks in input order within their first section: the caller's order breaks ties. */
        for (int i = 0; i < n && fill; i++) s.starts[s.start_at[s.a[i]] + fill[s.a[i]]++] = i;
        free(fill);
        for (int q = 0; q < m && status == FOUND; q++) {
            if (s.rem[q] > target) status = INFEASIBLE;
            if (s.rem[q] == 0) s.top[q] = SKY_CLOSED;
        }
    }
    if (status == FOUND) status = sky_node(&s);
    if (s.failed) status = NO_MEMORY;
    *nodes = s.nodes;
    free(s.a); free(s.b); free(s.off); free(s.start_at); free(s.starts); free(s.top);
    free(s.rem); free(s.length); free(s.log.entries); free(s.moves);
    return status;
}
