/* iso.c: a minimal ISO 9660 image builder for NoCloud seed images (a
 * cdrom labelled "cidata" holding user-data, meta-data and
 * network-config), so bootstrap mode UserData needs no genisoimage.
 *
 * Plain ISO 9660 identifiers are 8.3 upper case ("USER_DAT.;1"); cloud-init
 * looks for "user-data", so the image also carries the long names twice:
 * Rock Ridge (SUSP "SP" and "ER" on the root, "PX" and "NM" on each file),
 * which Linux prefers, and a Joliet supplementary tree (UCS-2 names), which
 * everything else reads. Only a root directory with small files is needed:
 * the layout is fixed - system area, primary and Joliet descriptors,
 * terminator, four one-sector path tables, the two root directories, then
 * the files, each starting on a sector boundary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "pve_int.h"

#define SECTOR 2048

static void both16(unsigned char *p, uint16_t v)
{
  p[0] = (unsigned char)(v & 0xff);
  p[1] = (unsigned char)(v >> 8);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)(v & 0xff);
}

static void both32(unsigned char *p, uint32_t v)
{
  int i;
  for (i = 0; i < 4; i++) {
    p[i] = (unsigned char)(v >> (8 * i));
    p[7 - i] = (unsigned char)(v >> (8 * i));
  }
}

static void le32(unsigned char *p, uint32_t v)
{
  int i;
  for (i = 0; i < 4; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

static void be32(unsigned char *p, uint32_t v)
{
  int i;
  for (i = 0; i < 4; i++)
    p[3 - i] = (unsigned char)(v >> (8 * i));
}

struct entry {
  const struct carp_iso_file *f;
  char ident[16];           /* 8.3;1 */
  unsigned char jname[256]; /* UCS-2BE name + ";1" */
  size_t jlen;
  uint32_t extent;
};

static void recording_time(unsigned char out[7], const struct tm *tm)
{
  out[0] = (unsigned char)tm->tm_year;
  out[1] = (unsigned char)(tm->tm_mon + 1);
  out[2] = (unsigned char)tm->tm_mday;
  out[3] = (unsigned char)tm->tm_hour;
  out[4] = (unsigned char)tm->tm_min;
  out[5] = (unsigned char)tm->tm_sec;
  out[6] = 0; /* GMT */
}

static void volume_time(unsigned char out[17], const struct tm *tm)
{
  char tmp[96];
  snprintf(tmp, sizeof(tmp), "%04d%02d%02d%02d%02d%02d00", tm->tm_year + 1900,
           tm->tm_mon + 1, tm->tm_mday, tm->tm_hour, tm->tm_min, tm->tm_sec);
  memcpy(out, tmp, 16);
  out[16] = 0;
}

/* A directory record; su (system use) may be NULL. Returns its length. */
static size_t dirrec(unsigned char *p, const unsigned char *ident, size_t ilen,
                     uint32_t extent, uint32_t size, int dir,
                     const unsigned char *su, size_t sulen,
                     const unsigned char when[7])
{
  size_t len = 33 + ilen + (ilen % 2 == 0 ? 1 : 0) + sulen;
  if (len % 2)
    len++;
  memset(p, 0, len);
  p[0] = (unsigned char)len;
  both32(p + 2, extent);
  both32(p + 10, size);
  memcpy(p + 18, when, 7);
  p[25] = dir ? 2 : 0;
  both16(p + 28, 1);
  p[32] = (unsigned char)ilen;
  memcpy(p + 33, ident, ilen);
  if (su)
    memcpy(p + 33 + ilen + (ilen % 2 == 0 ? 1 : 0), su, sulen);
  return len;
}

static size_t rr_px(unsigned char *p, uint32_t mode, uint32_t nlink)
{
  p[0] = 'P';
  p[1] = 'X';
  p[2] = 36;
  p[3] = 1;
  both32(p + 4, mode);
  both32(p + 12, nlink);
  both32(p + 20, 0);
  both32(p + 28, 0);
  return 36;
}

static void mangle(const char *name, char out[16], int n)
{
  char base[9], ext[4];
  size_t b = 0, e = 0;
  const char *dot = strchr(name, '.');
  const char *p;
  for (p = name; *p && (!dot || p < dot) && b < 8; p++) {
    char c = *p;
    if (c >= 'a' && c <= 'z')
      c = (char)(c - 32);
    base[b++] = ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) ? c : '_';
  }
  base[b] = '\0';
  if (dot)
    for (p = dot + 1; *p && e < 3; p++) {
      char c = *p;
      if (c >= 'a' && c <= 'z')
        c = (char)(c - 32);
      ext[e++] = ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) ? c : '_';
    }
  ext[e] = '\0';
  if (n > 0 && b > 0) { /* make it unique: last char becomes a digit */
    base[b - 1] = (char)('0' + n % 10);
  }
  snprintf(out, 16, "%s.%s;1", base, ext);
}

static int cmp_ident(const void *a, const void *b)
{
  const struct entry *x = *(const struct entry *const *)a;
  const struct entry *y = *(const struct entry *const *)b;
  return strcmp(x->ident, y->ident);
}

static int cmp_jname(const void *a, const void *b)
{
  const struct entry *x = *(const struct entry *const *)a;
  const struct entry *y = *(const struct entry *const *)b;
  size_t n = x->jlen < y->jlen ? x->jlen : y->jlen;
  int c = memcmp(x->jname, y->jname, n);
  return c ? c : (x->jlen > y->jlen) - (x->jlen < y->jlen);
}

static void ucs2_field(unsigned char *p, size_t bytes, const char *s)
{
  size_t i, n = strlen(s);
  for (i = 0; i + 1 < bytes; i += 2) {
    size_t k = i / 2;
    p[i] = 0;
    p[i + 1] = k < n ? (unsigned char)s[k] : ' ';
  }
}

static void volume_descriptor(unsigned char *d, int joliet, const char *label,
                              uint32_t total, uint32_t lpath, uint32_t mpath,
                              const unsigned char *rootrec,
                              const unsigned char vtime[17])
{
  memset(d, 0, SECTOR);
  d[0] = joliet ? 2 : 1;
  memcpy(d + 1, "CD001", 5);
  d[6] = 1;
  if (joliet) {
    ucs2_field(d + 8, 32, "");
    ucs2_field(d + 40, 32, label);
    d[88] = '%';
    d[89] = '/';
    d[90] = 'E';
  } else {
    size_t n = strlen(label);
    memset(d + 8, ' ', 32);
    memset(d + 40, ' ', 32);
    memcpy(d + 40, label, n > 32 ? 32 : n);
  }
  both32(d + 80, total);
  both16(d + 120, 1);
  both16(d + 124, 1);
  both16(d + 128, SECTOR);
  both32(d + 132, 10);
  le32(d + 140, lpath);
  be32(d + 148, mpath);
  memcpy(d + 156, rootrec, 34);
  if (joliet) {
    ucs2_field(d + 190, 128, "");
    ucs2_field(d + 318, 128, "");
    ucs2_field(d + 446, 128, "");
    ucs2_field(d + 574, 128, "CARPENTER");
    ucs2_field(d + 702, 36, "");
    ucs2_field(d + 739, 36, "");
    ucs2_field(d + 776, 36, "");
  } else {
    memset(d + 190, ' ', 128 * 4 + 37 * 3);
    memcpy(d + 574, "CARPENTER", 9);
  }
  memcpy(d + 813, vtime, 17);
  memcpy(d + 830, vtime, 17);
  memset(d + 847, '0', 16);
  memset(d + 864, '0', 16);
  d[881] = 1;
}

static void path_tables(unsigned char *img, uint32_t lsec, uint32_t msec,
                        uint32_t rootext)
{
  unsigned char *l = img + (size_t)lsec * SECTOR,
                *m = img + (size_t)msec * SECTOR;
  l[0] = 1;
  le32(l + 2, rootext);
  l[6] = 1;
  m[0] = 1;
  be32(m + 2, rootext);
  m[7] = 1;
}

int carp_iso_build(const char *label, const struct carp_iso_file *files,
                   size_t n, struct carp_buf *out)
{
  enum {
    PVD = 16,
    SVD = 17,
    TERM = 18,
    LP = 19,
    MP = 20,
    JLP = 21,
    JMP = 22,
    ROOT = 23,
    JROOT = 24,
    DATA = 25
  };
  struct entry *ents, **order;
  unsigned char *img = NULL, when[7], vtime[17], rec[256], su[256];
  uint32_t next = DATA, total;
  size_t i, j, pos, len;
  struct tm tm;
  time_t now = time(NULL);
  int rc = 0;

  if (!label || (!files && n) || n > 32)
    return CARP_EINVAL;
  gmtime_r(&now, &tm);
  recording_time(when, &tm);
  volume_time(vtime, &tm);
  ents = carp_calloc(n ? n : 1, sizeof(*ents));
  order = carp_calloc(n ? n : 1, sizeof(*order));
  for (i = 0; i < n; i++) {
    size_t nl = strlen(files[i].name), k;
    int dup = 0;
    if (nl == 0 || nl > 100) {
      rc = CARP_EINVAL;
      goto out;
    }
    ents[i].f = &files[i];
    do {
      mangle(files[i].name, ents[i].ident, dup);
      for (k = 0; k < i; k++)
        if (!strcmp(ents[k].ident, ents[i].ident))
          break;
      dup++;
    } while (k < i && dup < 10);
    for (k = 0; k < nl; k++) {
      ents[i].jname[2 * k] = 0;
      ents[i].jname[2 * k + 1] = (unsigned char)files[i].name[k];
    }
    ents[i].jlen = 2 * nl;
    memcpy(ents[i].jname + ents[i].jlen,
           "\0;\0"
           "1",
           4);
    ents[i].jlen += 4;
    ents[i].extent = next;
    next += (uint32_t)((files[i].len + SECTOR - 1) / SECTOR);
    if (!files[i].len)
      next++; /* an empty file still gets its own (empty) sector */
    order[i] = &ents[i];
  }
  total = next;
  img = carp_calloc(total, SECTOR);

  /* Primary root directory with Rock Ridge. */
  {
    unsigned char *dir = img + (size_t)ROOT * SECTOR;
    static const char er_id[] = "RRIP_1991A";
    static const char er_des[] = "ROCK RIDGE 1.09";
    static const char er_src[] = "CARPENTER";
    size_t sl = 0;
    unsigned char dot = 0, dotdot = 1;
    su[sl++] = 'S';
    su[sl++] = 'P';
    su[sl++] = 7;
    su[sl++] = 1;
    su[sl++] = 0xBE;
    su[sl++] = 0xEF;
    su[sl++] = 0;
    sl += rr_px(su + sl, 040555, 2);
    su[sl] = 'E';
    su[sl + 1] = 'R';
    su[sl + 2] =
        (unsigned char)(8 + strlen(er_id) + strlen(er_des) + strlen(er_src));
    su[sl + 3] = 1;
    su[sl + 4] = (unsigned char)strlen(er_id);
    su[sl + 5] = (unsigned char)strlen(er_des);
    su[sl + 6] = (unsigned char)strlen(er_src);
    su[sl + 7] = 1;
    memcpy(su + sl + 8, er_id, strlen(er_id));
    memcpy(su + sl + 8 + strlen(er_id), er_des, strlen(er_des));
    memcpy(su + sl + 8 + strlen(er_id) + strlen(er_des), er_src,
           strlen(er_src));
    sl += su[sl + 2];
    pos = dirrec(dir, &dot, 1, ROOT, SECTOR, 1, su, sl, when);
    sl = rr_px(su, 040555, 2);
    pos += dirrec(dir + pos, &dotdot, 1, ROOT, SECTOR, 1, su, sl, when);
    qsort(order, n, sizeof(*order), cmp_ident);
    for (i = 0; i < n; i++) {
      const struct entry *e = order[i];
      size_t nl = strlen(e->f->name);
      sl = rr_px(su, 0100444, 1);
      su[sl] = 'N';
      su[sl + 1] = 'M';
      su[sl + 2] = (unsigned char)(5 + nl);
      su[sl + 3] = 1;
      su[sl + 4] = 0;
      memcpy(su + sl + 5, e->f->name, nl);
      sl += 5 + nl;
      len = dirrec(rec, (const unsigned char *)e->ident, strlen(e->ident),
                   e->extent, (uint32_t)e->f->len, 0, su, sl, when);
      if (pos + len > SECTOR) {
        rc = CARP_ETOOBIG;
        goto out;
      }
      memcpy(dir + pos, rec, len);
      pos += len;
    }
  }
  /* Joliet root directory. */
  {
    unsigned char *dir = img + (size_t)JROOT * SECTOR;
    unsigned char dot = 0, dotdot = 1;
    pos = dirrec(dir, &dot, 1, JROOT, SECTOR, 1, NULL, 0, when);
    pos += dirrec(dir + pos, &dotdot, 1, JROOT, SECTOR, 1, NULL, 0, when);
    qsort(order, n, sizeof(*order), cmp_jname);
    for (i = 0; i < n; i++) {
      const struct entry *e = order[i];
      len = dirrec(rec, e->jname, e->jlen, e->extent, (uint32_t)e->f->len, 0,
                   NULL, 0, when);
      if (pos + len > SECTOR) {
        rc = CARP_ETOOBIG;
        goto out;
      }
      memcpy(dir + pos, rec, len);
      pos += len;
    }
  }
  /* Descriptors and path tables. */
  {
    unsigned char root[34], dot = 0;
    dirrec(root, &dot, 1, ROOT, SECTOR, 1, NULL, 0, when);
    volume_descriptor(img + (size_t)PVD * SECTOR, 0, label, total, LP, MP, root,
                      vtime);
    dirrec(root, &dot, 1, JROOT, SECTOR, 1, NULL, 0, when);
    volume_descriptor(img + (size_t)SVD * SECTOR, 1, label, total, JLP, JMP,
                      root, vtime);
    img[(size_t)TERM * SECTOR] = 255;
    memcpy(img + (size_t)TERM * SECTOR + 1, "CD001", 5);
    img[(size_t)TERM * SECTOR + 6] = 1;
    path_tables(img, LP, MP, ROOT);
    path_tables(img, JLP, JMP, JROOT);
  }
  for (j = 0; j < n; j++)
    if (ents[j].f->len)
      memcpy(img + (size_t)ents[j].extent * SECTOR, ents[j].f->data,
             ents[j].f->len);
  rc = carp_buf_append(out, img, (size_t)total * SECTOR);
out:
  carp_free(img);
  carp_free(order);
  carp_free(ents);
  return rc;
}
