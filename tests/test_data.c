// The data layer: SHA-256, the IDX reader on good and malformed files, the
// dataset loader and its checksums (a named set, a copy of one, a set of the
// reader's own, damaged and swapped files), the shuffle and the batch fill.
// Known values of the committed sample were read from it independently with
// Python's gzip module (datasets/idxio.py).
#define _XOPEN_SOURCE 700
#include <criterion/criterion.h>
#include <ftw.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "checksums.h"
#include "dataset.h"
#include "env.h"
#include "idx.h"
#include "own_data.h"
#include "sha256.h"

// --- helpers

// A fresh directory for one test's files (Criterion runs each test in its
// own process, so no two tests share one).
static char tmp_dir[64];

static void make_tmp(void)
{
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/test_data_XXXXXX");
    cr_assert_not_null(mkdtemp(tmp_dir));
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static void remove_tmp(void) { nftw(tmp_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

static const char *tmp_path(const char *name)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", tmp_dir, name);
    return path;
}

static unsigned char *read_whole(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot read %s", path);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(*n + 1);
    cr_assert_eq(fread(buf, 1, *n, f), *n);
    fclose(f);
    return buf;
}

// Writes file[0..n) as NAME in the temp dir, reads it, and checks the error
// names the file, says what (want) and gives the fix.
static void expect_error(const char *name, const void *file, size_t n, const char *want)
{
    const char *path = tmp_path(name);
    write_file(path, file, n);
    struct idx x;
    char err[600] = "";
    cr_assert_eq(idx_read(path, &x, err, sizeof err), -1, "%s: read without error", name);
    cr_assert_not_null(strstr(err, path), "the error names the file: %s", err);
    cr_assert_not_null(strstr(err, want), "the error says '%s': %s", want, err);
    cr_assert_not_null(strstr(err, "make datasets"), "the error gives the fix: %s", err);
    cr_assert_null(x.bytes);
}

// A small valid image file: 3 images of 2×2 pixels.
static const uint32_t small_dims[3] = {3, 2, 2};
static const unsigned char small_body[12] = {0, 1, 2, 3, 10, 20, 30, 40, 255, 254, 253, 252};

// --- SHA-256: the FIPS 180-4 examples and NIST's long message

static void expect_sha(const char *msg, const char *want)
{
    char hex[65];
    sha256_hex(msg, strlen(msg), hex);
    cr_assert_str_eq(hex, want, "SHA-256(\"%.20s...\")", msg);
}

Test(sha256, fips_test_vectors)
{
    expect_sha("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect_sha("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect_sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
               "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    expect_sha("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopq"
               "klmnopqrlmnopqrsmnopqrstnopqrstu",
               "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

Test(sha256, a_million_a_in_uneven_pieces)
{
    // Pieces of 1..127 bytes cross the 64-byte block edge every way.
    char piece[128];
    memset(piece, 'a', sizeof piece);
    struct sha256 s;
    sha256_init(&s);
    long left = 1000000;
    for (int k = 1; left > 0; k = k % 127 + 1) {
        int n = left < k ? (int)left : k;
        sha256_update(&s, piece, (size_t)n);
        left -= n;
    }
    unsigned char d[32];
    sha256_final(&s, d);
    static const unsigned char want[32] = {
        0xcd, 0xc7, 0x6e, 0x5c, 0x99, 0x14, 0xfb, 0x92, 0x81, 0xa1, 0xc7, 0xe2, 0x84, 0xd7, 0x3e, 0x67,
        0xf1, 0x80, 0x9a, 0x48, 0xa4, 0x97, 0x20, 0x0e, 0x04, 0x6d, 0x39, 0xcc, 0xc7, 0x11, 0x2c, 0xd0,
    };
    cr_assert_arr_eq(d, want, 32);
}

Test(sha256, padding_edges_match_one_shot)
{
    // 55, 56, 63, 64 and 65 bytes: where the length does or does not fit.
    unsigned char msg[130];
    for (int i = 0; i < 130; i++)
        msg[i] = (unsigned char)(i * 7 + 1);
    for (size_t n = 54; n <= 130; n++) {
        char one[65], two[65];
        sha256_hex(msg, n, one);
        struct sha256 s;
        unsigned char d[32];
        sha256_init(&s);
        sha256_update(&s, msg, n / 3);
        sha256_update(&s, msg + n / 3, n - n / 3);
        sha256_final(&s, d);
        for (int i = 0; i < 32; i++)
            snprintf(two + 2 * i, 3, "%02x", d[i]);
        cr_assert_str_eq(one, two, "n = %zu", n);
    }
}

// --- IDX: good files

Test(idx, reads_the_sample)
{
    struct idx img, lab;
    char err[600];
    cr_assert_eq(idx_read(sample_file("train-images-idx3-ubyte.gz"), &img, err, sizeof err), 0, "%s", err);
    cr_assert_eq(idx_read(sample_file("train-labels-idx1-ubyte.gz"), &lab, err, sizeof err), 0, "%s", err);
    cr_assert_eq(img.ndims, 3);
    cr_assert_eq(img.count, 1600);
    cr_assert_eq(img.dims[1], 28);
    cr_assert_eq(img.dims[2], 28);
    cr_assert_eq(img.item_size, 784);
    cr_assert_eq(img.nbytes, 16 + 1600 * 784);
    cr_assert_eq(lab.ndims, 1);
    cr_assert_eq(lab.count, 1600);

    static const unsigned char first_labels[10] = {9, 0, 0, 3, 0, 2, 7, 2, 5, 5};
    cr_assert_arr_eq(lab.data, first_labels, 10);
    cr_assert_eq(lab.data[1599], 4);
    cr_assert_eq(img.data[14 * 28 + 14], 217);             // image 0, row 14, column 14
    cr_assert_eq(img.data[1599 * 784 + 10 * 28 + 20], 213);  // image 1599, row 10, column 20
    long sum0 = 0, total = 0;
    for (int p = 0; p < 784; p++)
        sum0 += img.data[p];
    for (size_t p = 0; p < img.count * img.item_size; p++)
        total += img.data[p];
    cr_assert_eq(sum0, 76247);
    cr_assert_eq(total, 91441596);
    cr_assert_eq(idx_check_pair(&img, "images", &lab, "labels", 10, err, sizeof err), 0, "%s", err);
    idx_free(&img);
    idx_free(&lab);
}

Test(idx, raw_and_gzip_read_the_same, .init = make_tmp, .fini = remove_tmp)
{
    struct idx gz, raw;
    char err[600];
    cr_assert_eq(idx_read(sample_file("t10k-images-idx3-ubyte.gz"), &gz, err, sizeof err), 0, "%s", err);
    write_file(tmp_path("t10k-images-idx3-ubyte"), gz.bytes, gz.nbytes);
    cr_assert_eq(idx_read(tmp_path("t10k-images-idx3-ubyte"), &raw, err, sizeof err), 0, "%s", err);
    cr_assert_eq(raw.count, 400);
    cr_assert_eq(raw.nbytes, gz.nbytes);
    cr_assert_arr_eq(raw.bytes, gz.bytes, raw.nbytes);
    cr_assert_eq(raw.data[14 * 28 + 14], 110);
    idx_free(&gz);
    idx_free(&raw);
}

// A .gz file is inflated as it is read, 64 KiB at a time: members that
// cross those chunk boundaries, and a member boundary that falls anywhere,
// must read the same as the file in memory.
Test(idx, a_file_read_in_chunks_equals_the_file_in_memory, .init = make_tmp, .fini = remove_tmp)
{
    // 300 images of 20×20 noise (the splitmix of the pixel index) barely
    // compress: 120 KB of body, so both members span several chunks.
    enum { COUNT = 300, SIDE = 20, BODY = COUNT * SIDE * SIDE };
    static unsigned char file[16 + BODY];
    static unsigned char body[BODY];
    uint64_t z = 7;
    for (int i = 0; i < BODY; i++) {
        z += 0x9e3779b97f4a7c15ULL;
        body[i] = (unsigned char)((z ^ (z >> 29)) * 0xbf58476d1ce4e5b9ULL >> 56);
    }
    const uint32_t dims[3] = {COUNT, SIDE, SIDE};
    size_t n = make_idx(file, 3, dims, body, BODY);
    write_gz(tmp_path("a.gz"), file, 70001);
    write_gz(tmp_path("b.gz"), file + 70001, n - 70001);
    size_t na, nb;
    unsigned char *a = read_whole(tmp_path("a.gz"), &na);
    unsigned char *b = read_whole(tmp_path("b.gz"), &nb);
    cr_assert_gt(na, 65536, "the first member spans more than one chunk (%zu bytes)", na);
    unsigned char *both = malloc(na + nb);
    memcpy(both, a, na);
    memcpy(both + na, b, nb);
    write_file(tmp_path("both.gz"), both, na + nb);
    struct idx x;
    char err[600];
    cr_assert_eq(idx_read(tmp_path("both.gz"), &x, err, sizeof err), 0, "%s", err);
    cr_assert_eq(x.count, COUNT);
    cr_assert_arr_eq(x.data, body, BODY);
    idx_free(&x);
    free(a);
    free(b);
    free(both);
}

Test(idx, concatenated_gzip_members_are_one_file, .init = make_tmp, .fini = remove_tmp)
{
    // gzip allows members back to back (`cat a.gz b.gz`): one stream.
    unsigned char file[64];
    size_t n = make_idx(file, 3, small_dims, small_body, sizeof small_body);
    write_gz(tmp_path("a.gz"), file, 10);
    write_gz(tmp_path("b.gz"), file + 10, n - 10);
    size_t na, nb;
    unsigned char *a = read_whole(tmp_path("a.gz"), &na);
    unsigned char *b = read_whole(tmp_path("b.gz"), &nb);
    unsigned char *both = malloc(na + nb);
    memcpy(both, a, na);
    memcpy(both + na, b, nb);
    struct idx x;
    char err[600];
    cr_assert_eq(idx_parse(both, na + nb, "both.gz", &x, err, sizeof err), 0, "%s", err);
    cr_assert_eq(x.count, 3);
    cr_assert_arr_eq(x.data, small_body, sizeof small_body);
    idx_free(&x);
    free(a);
    free(b);
    free(both);
}

// --- IDX: every way a file can be wrong gives its own clear error

Test(idx_malformed, empty_file, .init = make_tmp, .fini = remove_tmp)
{
    expect_error("empty", "", 0, "empty file");
}

Test(idx_malformed, missing_file, .init = make_tmp, .fini = remove_tmp)
{
    struct idx x;
    char err[600];
    const char *path = tmp_path("not-there-idx3-ubyte");
    cr_assert_eq(idx_read(path, &x, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, path), "%s", err);
    cr_assert_not_null(strstr(err, "cannot open"), "%s", err);
    cr_assert_not_null(strstr(err, "make datasets"), "%s", err);
}

Test(idx_malformed, truncated_header, .init = make_tmp, .fini = remove_tmp)
{
    unsigned char file[64];
    make_idx(file, 3, small_dims, small_body, sizeof small_body);
    expect_error("short3", file, 3, "too short for an IDX header");
    expect_error("short10", file, 10, "truncated header (10 of its 16 bytes)");
}

Test(idx_malformed, truncated_body, .init = make_tmp, .fini = remove_tmp)
{
    unsigned char file[64];
    size_t n = make_idx(file, 3, small_dims, small_body, sizeof small_body);
    expect_error("cut", file, n - 1, "truncated: its header declares 28 bytes (3 × 2 × 2), the file has 27");
}

Test(idx_malformed, trailing_bytes, .init = make_tmp, .fini = remove_tmp)
{
    unsigned char file[64] = {0};
    size_t n = make_idx(file, 3, small_dims, small_body, sizeof small_body);
    expect_error("long", file, n + 5, "5 bytes of trailing garbage");
}

Test(idx_malformed, wrong_magic, .init = make_tmp, .fini = remove_tmp)
{
    unsigned char file[64];
    size_t n = make_idx(file, 3, small_dims, small_body, sizeof small_body);
    file[0] = 0x50;  // 'P', as in a PNG or a PGM
    expect_error("magic", file, n, "not an IDX file");
}

Test(idx_malformed, wrong_type_byte, .init = make_tmp, .fini = remove_tmp)
{
    unsigned char file[64];
    size_t n = make_idx(file, 3, small_dims, small_body, sizeof small_body);
    file[2] = 0x0d;  // IDX's float type
    expect_error("float", file, n, "element type 0x0d, expected 0x08");
}

Test(idx_malformed, wrong_dimensions, .init = make_tmp, .fini = remove_tmp)
{
    unsigned char file[64];
    size_t n = make_idx(file, 3, small_dims, small_body, sizeof small_body);
    file[3] = 2;
    expect_error("two", file, n, "2 dimensions, expected 1 (labels) or 3 (images)");
    file[3] = 0;
    expect_error("zero", file, n, "0 dimensions");
    static const uint32_t no_rows[3] = {3, 0, 2};
    n = make_idx(file, 3, no_rows, small_body, 0);
    expect_error("norows", file, n, "dimension 1 is 0");
}

Test(idx_malformed, huge_header_is_not_allocated, .init = make_tmp, .fini = remove_tmp)
{
    // 2^32-1 images of 2^32-1 × 2^32-1 bytes: refused before any allocation.
    static const uint32_t huge[3] = {0xffffffffu, 0xffffffffu, 0xffffffffu};
    unsigned char file[64];
    size_t n = make_idx(file, 3, huge, small_body, sizeof small_body);
    expect_error("huge", file, n, "declares more than");
}

Test(idx_malformed, corrupt_gzip, .init = make_tmp, .fini = remove_tmp)
{
    struct idx x;
    char err[600];
    cr_assert_eq(idx_read(sample_file("t10k-labels-idx1-ubyte.gz"), &x, err, sizeof err), 0, "%s", err);
    write_gz(tmp_path("labels.gz"), x.bytes, x.nbytes);
    idx_free(&x);
    size_t n;
    unsigned char *gz = read_whole(tmp_path("labels.gz"), &n);

    // A byte changed in the compressed data: a bad block, or a CRC mismatch.
    gz[n / 2] ^= 0x55;
    expect_error("flipped.gz", gz, n, "corrupt gzip data");
    gz[n / 2] ^= 0x55;
    // The stored CRC-32 changed: the data inflates but does not check.
    gz[n - 8] ^= 1;
    expect_error("crc.gz", gz, n, "corrupt gzip data (incorrect data check)");
    gz[n - 8] ^= 1;
    // A gzip header with a bad compression method.
    gz[2] = 7;
    expect_error("method.gz", gz, n, "corrupt gzip data");
    free(gz);
}

Test(idx_malformed, truncated_gzip, .init = make_tmp, .fini = remove_tmp)
{
    unsigned char file[64];
    size_t n = make_idx(file, 3, small_dims, small_body, sizeof small_body);
    write_gz(tmp_path("small.gz"), file, n);
    size_t ngz;
    unsigned char *gz = read_whole(tmp_path("small.gz"), &ngz);
    expect_error("cut.gz", gz, ngz - 4, "truncated gzip stream");
    expect_error("cut-more.gz", gz, ngz / 2, "truncated gzip stream");
    expect_error("header-only.gz", gz, 10, "truncated gzip stream");
    free(gz);
}

Test(idx_malformed, garbage_after_gzip, .init = make_tmp, .fini = remove_tmp)
{
    unsigned char file[64];
    size_t n = make_idx(file, 3, small_dims, small_body, sizeof small_body);
    write_gz(tmp_path("small.gz"), file, n);
    size_t ngz;
    unsigned char *gz = read_whole(tmp_path("small.gz"), &ngz);
    unsigned char *longer = malloc(ngz + 3);
    memcpy(longer, gz, ngz);
    memcpy(longer + ngz, "xyz", 3);
    expect_error("tail.gz", longer, ngz + 3, "3 bytes of trailing garbage after the gzip stream");
    free(gz);
    free(longer);
}

Test(idx_malformed, gzip_of_a_truncated_file, .init = make_tmp, .fini = remove_tmp)
{
    // A good gzip stream around a bad IDX file: the IDX checks still apply.
    unsigned char file[64];
    size_t n = make_idx(file, 3, small_dims, small_body, sizeof small_body);
    write_gz(tmp_path("inner.gz"), file, n - 2);
    size_t ngz;
    unsigned char *gz = read_whole(tmp_path("inner.gz"), &ngz);
    expect_error("inner-cut.gz", gz, ngz, "truncated: its header declares 28 bytes");
    free(gz);
}

Test(idx_malformed, named_gz_but_not_gzip, .init = make_tmp, .fini = remove_tmp)
{
    unsigned char file[64];
    size_t n = make_idx(file, 3, small_dims, small_body, sizeof small_body);
    expect_error("plain.gz", file, n, "named .gz but not gzip data");
}

Test(idx_malformed, images_against_labels)
{
    unsigned char ibuf[64], lbuf[16];
    static const uint32_t three[1] = {3}, four[1] = {4};
    static const unsigned char good[4] = {0, 9, 5, 1}, bad[3] = {0, 10, 5};
    struct idx img, lab;
    char err[600];
    size_t n = make_idx(ibuf, 3, small_dims, small_body, sizeof small_body);
    cr_assert_eq(idx_parse(ibuf, n, "img", &img, err, sizeof err), 0, "%s", err);

    n = make_idx(lbuf, 1, four, good, 4);
    cr_assert_eq(idx_parse(lbuf, n, "lab4", &lab, err, sizeof err), 0, "%s", err);
    cr_assert_eq(idx_check_pair(&img, "img", &lab, "lab4", 10, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "lab4: 4 labels for the 3 images of img"), "%s", err);
    cr_assert_not_null(strstr(err, "make datasets"), "%s", err);
    // The two the wrong way round.
    cr_assert_eq(idx_check_pair(&lab, "lab4", &img, "img", 10, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "lab4: 1 dimension(s), an image file has 3"), "%s", err);
    idx_free(&lab);

    n = make_idx(lbuf, 1, three, bad, 3);
    cr_assert_eq(idx_parse(lbuf, n, "lab10", &lab, err, sizeof err), 0, "%s", err);
    cr_assert_eq(idx_check_pair(&img, "img", &lab, "lab10", 10, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "lab10: label 10 at item 1, expected 0 to 9"), "%s", err);
    idx_free(&lab);
    idx_free(&img);
}

// --- the dataset loader

Test(dataset, loads_the_sample)
{
    struct dataset ds;
    char err[1000];
    cr_assert_eq(dataset_load("sample", NULL, &ds, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(ds.name, "sample");
    cr_assert_eq(ds.train.count, 1600);
    cr_assert_eq(ds.test.count, 400);
    cr_assert_eq(ds.train.rows, 28);
    cr_assert_eq(ds.train.cols, 28);
    cr_assert_eq(ds.train.pixels, 784);
    int per_class[2][10] = {{0}};
    for (int i = 0; i < ds.train.count; i++)
        per_class[0][ds.train.labels[i]]++;
    for (int i = 0; i < ds.test.count; i++)
        per_class[1][ds.test.labels[i]]++;
    for (int c = 0; c < 10; c++) {
        cr_assert_eq(per_class[0][c], 160, "class %d", c);
        cr_assert_eq(per_class[1][c], 40, "class %d", c);
    }
    cr_assert_eq(ds.test.labels[0], 9);
    cr_assert_eq(ds.test.labels[399], 5);
    cr_assert_eq(ds.test.images[14 * 28 + 14], 110);
    dataset_free(&ds);
}

// A subdirectory of the temp dir, made.
static const char *tmp_subdir(const char *name)
{
    const char *path = tmp_path(name);
    cr_assert_eq(mkdir(path, 0700), 0, "mkdir %s", path);
    return path;
}

// One grey level changed in one training image of dir: still a valid IDX file.
static void change_one_pixel(const char *dir)
{
    char path[300];
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte", dir);
    size_t n;
    unsigned char *b = read_whole(path, &n);
    b[16 + 500] ^= 1;
    write_file(path, b, n);
    free(b);
}

// The checksums of datasets/SHA256SUMS and their rule (common/data/
// checksums.c): a directory is checked under its own name, so a copy of the
// sample anywhere is the sample's files (rule 2) and needs no note.
Test(dataset, loads_a_directory_of_raw_files, .init = make_tmp, .fini = remove_tmp)
{
    copy_sample_raw(tmp_dir);
    struct dataset ds;
    char err[1000];
    cr_assert_eq(dataset_load(tmp_dir, NULL, &ds, err, sizeof err), 0, "%s", err);
    cr_assert_eq(ds.train.count, 1600);
    cr_assert_eq(ds.test.count, 400);
    cr_assert_eq(ds.train.images[1599 * 784 + 10 * 28 + 20], 213);
    cr_assert_str_empty(ds.note, "a copy of the sample is known: %s", ds.note);
    dataset_free(&ds);
}

// Rule 1: a directory named like a set of the list is that set, and other
// bytes are damage; the same bytes in a directory of another name are a set
// of the reader's own (rule 4).
Test(dataset, a_changed_file_is_damage_in_a_known_set_and_new_data_elsewhere, .init = make_tmp,
     .fini = remove_tmp)
{
    const char *dir = tmp_subdir("sample");
    copy_sample_raw(dir);
    change_one_pixel(dir);
    char path[300], link[300];
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte", dir);
    struct dataset ds;
    char err[1000];
    cr_assert_eq(dataset_load(dir, NULL, &ds, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, path), "%s", err);
    cr_assert_not_null(strstr(err, "checksum mismatch"), "%s", err);
    cr_assert_not_null(strstr(err, "lists for sample/train-images-idx3-ubyte"), "%s", err);
    cr_assert_not_null(strstr(err, "make datasets"), "%s", err);
    cr_assert_not_null(strstr(err, "a directory of another name"), "%s", err);
    cr_assert_null(ds.train.images);
    // Reached through a link, or as ".", it is still the directory "sample".
    snprintf(link, sizeof link, "%s/mine", tmp_dir);
    cr_assert_eq(symlink(dir, link), 0);
    cr_assert_eq(dataset_load(link, NULL, &ds, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "checksum mismatch"), "%s", err);
    cr_assert_eq(chdir(dir), 0);
    cr_assert_eq(dataset_load(".", NULL, &ds, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "lists for sample/train-images-idx3-ubyte"), "%s", err);

    const char *other = tmp_subdir("changed");
    copy_sample_raw(other);
    change_one_pixel(other);
    cr_assert_eq(dataset_load(other, NULL, &ds, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(ds.name, "changed");
    cr_assert_not_null(strstr(ds.note, "datasets/SHA256SUMS does not list changed"), "%s",
                       ds.note);
    dataset_free(&ds);
}

Test(dataset, a_set_under_another_name_fails_its_checksum, .init = make_tmp, .fini = remove_tmp)
{
    // The sample's files put where Fashion-MNIST's belong.
    char dir[300];
    snprintf(dir, sizeof dir, "%s/fashion", tmp_dir);
    cr_assert_eq(mkdir(dir, 0700), 0);
    copy_sample_raw(dir);
    struct dataset ds;
    char err[1000];
    cr_assert_eq(dataset_load("fashion", tmp_dir, &ds, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "checksum mismatch"), "%s", err);
    cr_assert_not_null(strstr(err, "fashion/train-images-idx3-ubyte"), "%s", err);
    cr_assert_not_null(strstr(err, "they are those of sample/train-images-idx3-ubyte"), "%s",
                       err);
    // The same directory named by its path is checked the same way.
    cr_assert_eq(dataset_load(dir, NULL, &ds, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "not the one datasets/SHA256SUMS lists for "
                                   "fashion/train-images-idx3-ubyte"),
                       "%s", err);
}

// Rule 3: a file the list knows under another file name is refused.
Test(dataset, swapped_files_are_refused, .init = make_tmp, .fini = remove_tmp)
{
    const char *dir = tmp_subdir("swapped");
    copy_sample_raw(dir);
    for (int f = 0; f < 2; f++) {
        char train[300], test[300], keep[300];
        snprintf(train, sizeof train, "%s/%s", dir, idx_file_name(f));
        snprintf(test, sizeof test, "%s/%s", dir, idx_file_name(f + 2));
        snprintf(keep, sizeof keep, "%s/keep", dir);
        cr_assert_eq(rename(train, keep) | rename(test, train) | rename(keep, test), 0);
    }
    struct dataset ds;
    char err[1000];
    cr_assert_eq(dataset_load(dir, NULL, &ds, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "swapped/train-images-idx3-ubyte: its bytes are those "
                                   "datasets/SHA256SUMS lists for sample/t10k-images-idx3-ubyte, "
                                   "not a train-images-idx3-ubyte"),
                       "%s", err);
}

// Rule 4: a set the list does not know loads, and its note gives the four
// checksums as lines of the list, on one line.
Test(dataset, an_unlisted_set_loads_with_its_checksums_in_a_note, .init = make_tmp,
     .fini = remove_tmp)
{
    unsigned char file[64];
    static const uint32_t three[1] = {3};
    static const unsigned char labels[3] = {1, 2, 3};
    char sha[4][65];
    const char *dir = tmp_subdir("tiny");
    for (int f = 0; f < 4; f++) {
        size_t n = f % 2 ? make_idx(file, 1, three, labels, 3)
                         : make_idx(file, 3, small_dims, small_body, sizeof small_body);
        char path[300];
        snprintf(path, sizeof path, "%s/%s", dir, idx_file_name(f));
        write_file(path, file, n);
        sha256_hex(file, n, sha[f]);
    }
    struct dataset ds;
    char err[1000];
    cr_assert_eq(dataset_load(dir, NULL, &ds, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(ds.name, "tiny");
    cr_assert_eq(ds.train.count, 3);
    cr_assert_eq(ds.train.pixels, 4);
    cr_assert_eq(ds.test.labels[2], 3);
    cr_assert_null(strchr(ds.note, '\n'), "one line: %s", ds.note);
    cr_assert(strncmp(ds.note, "datasets/SHA256SUMS does not list tiny: ", 40) == 0, "%s",
              ds.note);
    for (int f = 0; f < 4; f++) {
        char line[200];
        snprintf(line, sizeof line, "%s  tiny/%s", sha[f], idx_file_name(f));
        cr_assert_not_null(strstr(ds.note, line), "'%s' in: %s", line, ds.note);
    }
    dataset_free(&ds);
}

// A directory however it is written, gzipped files or not.
Test(dataset, a_directory_is_accepted_however_written, .init = make_tmp, .fini = remove_tmp)
{
    cr_assert_eq(chdir(tmp_dir), 0);
    cr_assert_eq(mkdir("mysplit", 0700), 0);
    write_own_set("mysplit", 30, 20, 28, 28, 1, NULL);
    char absolute[300];
    snprintf(absolute, sizeof absolute, "%s/mysplit/", tmp_dir);
    const char *spellings[] = {"mysplit", "mysplit/", "./mysplit", "mysplit//", absolute};
    for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++) {
        struct dataset ds;
        char err[1000];
        cr_assert_eq(dataset_load(spellings[i], NULL, &ds, err, sizeof err), 0, "'%s': %s",
                     spellings[i], err);
        cr_assert_str_eq(ds.name, "mysplit", "'%s'", spellings[i]);
        cr_assert_eq(ds.train.count, 30, "'%s'", spellings[i]);
        cr_assert_eq(ds.test.count, 20, "'%s'", spellings[i]);
        cr_assert_str_not_empty(ds.note, "'%s'", spellings[i]);
        cr_assert_null(strstr(ds.dir, "//"), "'%s' read from %s", spellings[i], ds.dir);
        dataset_free(&ds);
    }
}

// Without the list, everything else is still checked, and the message says
// the fix is the reader's: `make datasets` would not fetch their file again.
Test(dataset, an_unlisted_set_is_checked_without_the_list, .init = make_tmp, .fini = remove_tmp)
{
    static const struct {
        int file;       // which file to spoil
        const char *how;
        const char *want;
    } cases[] = {
        {1, "label", "label 10 at item 7, expected 0 to 9"},
        {3, "count", "19 labels for the 20 images"},
        {2, "size", "test images are 14×14, training images 28×28"},
        {0, "truncated gz", "truncated gzip stream"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *dir = tmp_subdir(cases[c].how);
        write_own_set(dir, 30, 20, 28, 28, 1, NULL);
        char path[300];
        snprintf(path, sizeof path, "%s/%s.gz", dir, idx_file_name(cases[c].file));
        struct idx x;
        char err[1000];
        cr_assert_eq(idx_read(path, &x, err, sizeof err), 0, "%s", err);
        unsigned char *b = x.bytes;
        size_t n = x.nbytes;
        if (c == 0) {
            b[8 + 7] = 10;
        } else if (c == 1) {
            b[7] = 19;  // the header's count, and one byte less
            n--;
        } else if (c == 2) {
            b[11] = b[15] = 14;  // 20 images of 14×14: the first quarter of the bytes
            n = 16 + 20 * 14 * 14;
        }
        if (c == 3) {
            size_t gzn;
            unsigned char *gz = read_whole(path, &gzn);
            write_file(path, gz, gzn / 2);
            free(gz);
        } else {
            write_gz(path, b, n);
        }
        idx_free(&x);
        struct dataset ds;
        cr_assert_eq(dataset_load(dir, NULL, &ds, err, sizeof err), -1, "%s", cases[c].how);
        cr_assert_not_null(strstr(err, cases[c].want), "%s: %s", cases[c].how, err);
        cr_assert_null(strstr(err, "fetch it again"), "%s: %s", cases[c].how, err);
        if (c != 2)  // the sizes' message is dataset.c's own
            cr_assert_not_null(strstr(err, "mend the file, or make it again"), "%s: %s",
                               cases[c].how, err);
    }
}

// The list itself: its lines are checked (readers add to it), and a name
// ending in .gz is the checksum of that archive's own bytes.
Test(checksums, the_list_and_the_archive_rule, .init = make_tmp, .fini = remove_tmp)
{
    const char *dir = tmp_subdir("own");
    char sha[4][65], list[300], line[400], archive[65], path[300], err[1000];
    write_own_set(dir, 10, 10, 4, 4, 1, sha);
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", dir);
    size_t n;
    unsigned char *gz = read_whole(path, &n);
    sha256_hex(gz, n, archive);
    free(gz);

    snprintf(list, sizeof list, "%s/SHA256SUMS", tmp_dir);
    snprintf(line, sizeof line, "# a comment\n\n%s *own/train-images-idx3-ubyte.gz\n", archive);
    write_file(list, line, strlen(line));
    struct checksums c;
    cr_assert_eq(checksums_read(list, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(c.count, 1);
    cr_assert_str_eq(c.list[0].set, "own");
    cr_assert_str_eq(c.list[0].file, "train-images-idx3-ubyte");
    cr_assert_eq(c.list[0].archive, 1);
    const char *file = "train-images-idx3-ubyte";
    cr_assert_eq(checksums_check(&c, "own", file, path, sha[0], "hint", err, sizeof err),
                 CHECKSUM_LISTED, "%s", err);
    cr_assert_eq(checksums_check(&c, "other", file, path, sha[0], "hint", err, sizeof err),
                 CHECKSUM_LISTED, "a copy, under another set: %s", err);
    // The same IDX bytes, not in that archive: its own name says it is damaged.
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte", dir);
    cr_assert_eq(checksums_check(&c, "own", file, path, sha[0], "hint", err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "lists for own/train-images-idx3-ubyte; the file is damaged"),
                       "%s", err);
    cr_assert(strlen(err) > 4 && strcmp(err + strlen(err) - 4, "hint") == 0, "%s", err);
    cr_assert_eq(checksums_check(&c, "other", file, path, sha[0], "hint", err, sizeof err),
                 CHECKSUM_UNLISTED);
    checksums_free(&c);

    static const char *const bad[] = {
        "abc  own/train-images-idx3-ubyte\n",
        "%s  train-images-idx3-ubyte\n",
        "%s  own/train-images-idx3-ubyte extra\n",
        "%s  own/\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[400];
        snprintf(line, sizeof line, "# ok\n%s", bad[i]);
        snprintf(text, sizeof text, line, archive);
        write_file(list, text, strlen(text));
        cr_assert_eq(checksums_read(list, &c, err, sizeof err), -1, "%s", text);
        cr_assert_not_null(strstr(err, "SHA256SUMS:2: not a line of the form"), "%s", err);
        cr_assert_null(c.list);
    }
}

Test(dataset, a_missing_set_says_make_datasets, .init = make_tmp, .fini = remove_tmp)
{
    struct dataset ds;
    char err[1000];
    cr_assert_eq(dataset_load("mnist", tmp_dir, &ds, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "/mnist/train-images-idx3-ubyte: missing"), "%s", err);
    cr_assert_not_null(strstr(err, "make datasets"), "%s", err);
    // DATA_DIR reaches the loader the way a program hands it over: read at
    // the edge (cli/env.h), passed as the directory.
    setenv("DATA_DIR", tmp_dir, 1);
    const struct environment env = env_read();
    cr_assert_str_eq(env.data_dir, tmp_dir);
    cr_assert_eq(dataset_load("fashion", env.data_dir, &ds, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, tmp_dir), "%s", err);
    unsetenv("DATA_DIR");
}

Test(dataset, a_bad_name_is_an_error)
{
    struct dataset ds;
    char err[1000];
    cr_assert_eq(dataset_load("Fashion!", NULL, &ds, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "unknown dataset 'Fashion!'"), "%s", err);
    cr_assert_eq(dataset_load("kmnist", NULL, &ds, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "give mnist, fashion, sample or a directory"), "%s", err);
}

Test(dataset, a_damaged_file_fails_the_load, .init = make_tmp, .fini = remove_tmp)
{
    copy_sample_raw(tmp_dir);
    // Drop the last test label.
    const char *path = tmp_path("t10k-labels-idx1-ubyte");
    size_t n;
    unsigned char *b = read_whole(path, &n);
    write_file(path, b, n - 1);
    free(b);
    struct dataset ds;
    char err[1000];
    cr_assert_eq(dataset_load(tmp_dir, NULL, &ds, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "truncated"), "%s", err);
    cr_assert_null(ds.train.images);
}

// Fashion-MNIST itself, when `make datasets` has fetched it (never needed by
// the tests: the committed sample is).
Test(dataset, loads_fashion_when_fetched)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/build/datasets/fashion/train-images-idx3-ubyte.gz",
             checkout_root());
    if (access(dir, R_OK) != 0)
        cr_skip_test("Fashion-MNIST not fetched (make datasets)");
    struct dataset ds;
    char err[1000];
    cr_assert_eq(dataset_load("fashion", NULL, &ds, err, sizeof err), 0, "%s", err);
    cr_assert_eq(ds.train.count, 60000);
    cr_assert_eq(ds.test.count, 10000);
    cr_assert_eq(ds.train.labels[0], 9);
    dataset_free(&ds);
}

// --- shuffle and batch

Test(shuffle, same_seed_same_order_and_a_permutation)
{
    // Values from an independent implementation (Python) of the same
    // splitmix64 and Fisher-Yates: the order is the same on every machine.
    static const int want42[10] = {0, 9, 5, 8, 6, 4, 7, 2, 1, 3};
    static const int want43[10] = {4, 2, 5, 6, 1, 3, 9, 8, 7, 0};
    static const int want7[8] = {863, 775, 933, 635, 1583, 283, 256, 1274};
    int order[1600];
    dataset_shuffle(order, 10, 42);
    cr_assert_arr_eq(order, want42, sizeof want42);
    dataset_shuffle(order, 10, 43);
    cr_assert_arr_eq(order, want43, sizeof want43);
    dataset_shuffle(order, 1600, 7);
    cr_assert_arr_eq(order, want7, sizeof want7);
    static char seen[1600];
    for (int i = 0; i < 1600; i++) {
        cr_assert(order[i] >= 0 && order[i] < 1600);
        cr_assert_eq(seen[order[i]], 0, "%d twice", order[i]);
        seen[order[i]] = 1;
    }
    dataset_shuffle(order, 1, 5);
    cr_assert_eq(order[0], 0);
    dataset_shuffle(order, 0, 5);  // nothing to do, nothing touched
}

Test(shuffle, every_order_equally_likely)
{
    // 6,000 shuffles of 3 items: each of the 6 orders about 1,000 times
    // (the standard deviation is about 29; 150 is over 5 of them).
    int count[6] = {0};
    for (uint64_t seed = 0; seed < 6000; seed++) {
        int o[3];
        dataset_shuffle(o, 3, seed);
        count[o[0] * 2 + (o[1] > o[2])]++;
    }
    for (int k = 0; k < 6; k++)
        cr_assert(count[k] > 850 && count[k] < 1150, "order %d came %d times", k, count[k]);
}

Test(batch, converts_bytes_to_floats_in_order)
{
    static unsigned char images[5 * 4], labels[5] = {3, 1, 4, 1, 5};
    for (int i = 0; i < 20; i++)
        images[i] = (unsigned char)(i * 13);  // 0 .. 247
    images[19] = 255;
    struct dataset_split s = {.count = 5, .rows = 2, .cols = 2, .pixels = 4, .images = images,
                              .labels = labels};
    float x[3 * 4];
    int y[3];
    static const int order[5] = {4, 0, 2, 1, 3};
    cr_assert_eq(dataset_batch(&s, order, 0, 3, x, y), 3);
    static const int want_rows[3] = {4, 0, 2};
    for (int b = 0; b < 3; b++) {
        cr_assert_eq(y[b], labels[want_rows[b]]);
        for (int p = 0; p < 4; p++) {
            float want = (float)images[want_rows[b] * 4 + p] / 255.0f;
            cr_assert_eq(x[b * 4 + p], want, "row %d pixel %d", b, p);
            cr_assert(x[b * 4 + p] >= 0.0f && x[b * 4 + p] <= 1.0f);
        }
    }
    cr_assert_eq(x[0 * 4 + 3], 1.0f);  // 255 is exactly 1
    cr_assert_eq(x[1 * 4 + 0], 0.0f);  // 0 is exactly 0

    // The last batch is short; past the end there is nothing.
    cr_assert_eq(dataset_batch(&s, order, 3, 3, x, y), 2);
    cr_assert_eq(y[0], labels[1]);
    cr_assert_eq(y[1], labels[3]);
    cr_assert_eq(dataset_batch(&s, order, 5, 3, x, y), 0);
    // No order: the split as it is.
    cr_assert_eq(dataset_batch(&s, NULL, 1, 2, x, y), 2);
    cr_assert_eq(y[0], 1);
    cr_assert_eq(y[1], 4);
    cr_assert_eq(x[0], (float)images[4] / 255.0f);
}

// The batch shared among threads: the same floats and labels on 1, 2 and 3
// threads, for a batch whose size 3 does not divide.
Test(batch, the_same_floats_on_any_thread_count)
{
    struct dataset ds;
    char err[1000];
    cr_assert_eq(dataset_load("sample", NULL, &ds, err, sizeof err), 0, "%s", err);
    int order[1600];
    dataset_shuffle(order, ds.train.count, 2);
    enum { B = 61 };
    static float x[3][B * 784];
    int y[3][B];
    for (int threads = 1; threads <= 3; threads++)
        cr_assert_eq(dataset_batch_threads(&ds.train, order, 100, B, x[threads - 1],
                                           y[threads - 1], threads), B);
    for (int threads = 2; threads <= 3; threads++) {
        cr_assert(memcmp(x[0], x[threads - 1], sizeof x[0]) == 0, "floats on %d threads",
                  threads);
        cr_assert(memcmp(y[0], y[threads - 1], sizeof y[0]) == 0, "labels on %d threads",
                  threads);
    }
    dataset_free(&ds);
}

Test(batch, a_sample_batch_matches_its_bytes)
{
    struct dataset ds;
    char err[1000];
    cr_assert_eq(dataset_load("sample", NULL, &ds, err, sizeof err), 0, "%s", err);
    int order[1600];
    dataset_shuffle(order, ds.train.count, 1);
    float *x = malloc(64 * 784 * sizeof *x);
    int y[64];
    cr_assert_eq(dataset_batch(&ds.train, order, 64, 64, x, y), 64);
    for (int b = 0; b < 64; b++) {
        int i = order[64 + b];
        cr_assert_eq(y[b], ds.train.labels[i]);
        for (int p = 0; p < 784; p++)
            cr_assert_eq(x[b * 784 + p], (float)ds.train.images[i * 784 + p] / 255.0f);
    }
    free(x);
    dataset_free(&ds);
}

// The checkout is found from the program's own file, not compiled in: the
// test program lives in build/ under it, and the directory found holds the
// list and is one the program's path starts with.
Test(checkout, is_found_above_the_program)
{
    const char *root = checkout_root();
    cr_assert_not_null(root);
    char exe[4096], sums[4200];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    cr_assert(n > 0);
    exe[n] = '\0';
    size_t len = strlen(root);
    cr_assert(strncmp(exe, root, len) == 0 && exe[len] == '/', "%s is not above %s", root, exe);
    snprintf(sums, sizeof sums, "%s/datasets/SHA256SUMS", root);
    cr_assert_eq(access(sums, R_OK), 0, "%s", sums);
}
