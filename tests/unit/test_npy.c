/* Tests for src/io (.npy / .npz): round trips for every dtype and rank, NumPy-written files
 * (versions 1-3, Fortran order, big-endian), npz stored and deflated, hostile input
 * (truncations, bit flips, malformed header dicts, hand-built zips with bad sizes and CRCs,
 * a zip bomb over the size limit) and allocation-failure injection.
 *
 * The fx_* byte strings were produced once with NumPy 1.24 (Debian python3-numpy):
 *   np.save / np.lib.format.write_array(version=(2,0)/(3,0)) of the arrays named in each test,
 *   np.savez / np.savez_compressed(a=arange(6,f4).reshape(2,3), b=[1,-2,3] i8, c=uint8(7)),
 *   the same savez_compressed into a non-seekable stream (fx_npz_streamed), and
 *   zipfile.ZipFile for the duplicate / non-npy / bzip2 / truncated-entry archives. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "io/io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FX(n) fx_##n, (sizeof fx_##n - 1)

/* ---- NumPy-written fixtures --------------------------------------------------------------- */
static const char fx_np_f4_2x3[] =  /* 152 bytes */
    "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }    "
    "                                                      \x0a\x00\x00\x00\x00\x00\x00\x00"
    "\x3f\x00\x00\x80\x3f\x00\x00\xc0\x3f\x00\x00\x00@\x00\x00 @";
static const char fx_np_f2[] =  /* 136 bytes */
    "\x93NUMPY\x01\x00v\x00{'descr': '<f2', 'fortran_order': False, 'shape': (4,), }      "
    "                                                      \x0a\x00<\x00\xc1\x00" "8\x00" "d";
static const char fx_np_i8[] =  /* 160 bytes */
    "\x93NUMPY\x01\x00v\x00{'descr': '<i8', 'fortran_order': False, 'shape': (2, 2), }    "
    "                                                      \x0a\xff\xff\xff\xff\xff\xff\xff"
    "\xff\x00\x00\x00\x00\x00\x01\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
    "\x00\x00\xc0";
static const char fx_np_i4[] =  /* 140 bytes */
    "\x93NUMPY\x01\x00v\x00{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }      "
    "                                                      \x0a\xf9\xff\xff\xff\x00\x00\x00"
    "\x00\xff\xff\xff\x7f";
static const char fx_np_i1[] =  /* 132 bytes */
    "\x93NUMPY\x01\x00v\x00{'descr': '|i1', 'fortran_order': False, 'shape': (4,), }      "
    "                                                      \x0a\x80\x7f\x00\xff";
static const char fx_np_u1[] =  /* 131 bytes */
    "\x93NUMPY\x01\x00v\x00{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }      "
    "                                                      \x0a\x00\xff\x07";
static const char fx_np_b1[] =  /* 131 bytes */
    "\x93NUMPY\x01\x00v\x00{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }      "
    "                                                      \x0a\x01\x00\x01";
static const char fx_np_scalar[] =  /* 132 bytes */
    "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (), }        "
    "                                                      \x0a\x00\x00`@";
static const char fx_np_empty[] =  /* 128 bytes */
    "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }    "
    "                                                      \x0a";
static const char fx_np_be_f4[] =  /* 152 bytes */
    "\x93NUMPY\x01\x00v\x00{'descr': '>f4', 'fortran_order': False, 'shape': (3, 2), }    "
    "                                                      \x0a\x00\x00\x00\x00\x3f\x80\x00"
    "\x00@\x00\x00\x00@@\x00\x00@\x80\x00\x00@\xa0\x00\x00";
static const char fx_np_be_i8[] =  /* 152 bytes */
    "\x93NUMPY\x01\x00v\x00{'descr': '>i8', 'fortran_order': False, 'shape': (3,), }      "
    "                                                      \x0a\x00\x00\x00\x00\x00\x00\x00"
    "\x01\xff\xff\xff\xff\xff\xff\xff\xfe\x00\x00\x00\x00\x00\x00\x00\x03";
static const char fx_np_be_f2[] =  /* 132 bytes */
    "\x93NUMPY\x01\x00v\x00{'descr': '>f2', 'fortran_order': False, 'shape': (2,), }      "
    "                                                      \x0a<\x00\xc1\x00";
static const char fx_np_fortran_i4[] =  /* 224 bytes */
    "\x93NUMPY\x01\x00v\x00{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3, 4), }  "
    "                                                      \x0a\x00\x00\x00\x00\x0c\x00\x00"
    "\x00\x04\x00\x00\x00\x10\x00\x00\x00\x08\x00\x00\x00\x14\x00\x00\x00\x01\x00\x00\x00\x0d"
    "\x00\x00\x00\x05\x00\x00\x00\x11\x00\x00\x00\x09\x00\x00\x00\x15\x00\x00\x00\x02\x00\x00"
    "\x00\x0e\x00\x00\x00\x06\x00\x00\x00\x12\x00\x00\x00\x0a\x00\x00\x00\x16\x00\x00\x00\x03"
    "\x00\x00\x00\x0f\x00\x00\x00\x07\x00\x00\x00\x13\x00\x00\x00\x0b\x00\x00\x00\x17\x00\x00"
    "\x00";
static const char fx_np_fortran_be_f4[] =  /* 152 bytes */
    "\x93NUMPY\x01\x00v\x00{'descr': '>f4', 'fortran_order': True, 'shape': (2, 3), }     "
    "                                                      \x0a\x00\x00\x00\x00@@\x00\x00\x3f"
    "\x80\x00\x00@\x80\x00\x00@\x00\x00\x00@\xa0\x00\x00";
static const char fx_np_v2[] =  /* 144 bytes */
    "\x93NUMPY\x02\x00t\x00\x00\x00{'descr': '<i4', 'fortran_order': False, 'shape': (4,),"
    " }                                                          \x0a\x00\x00\x00\x00\x01\x00"
    "\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00";
static const char fx_np_v3[] =  /* 144 bytes */
    "\x93NUMPY\x03\x00t\x00\x00\x00{'descr': '<i4', 'fortran_order': False, 'shape': (4,),"
    " }                                                          \x0a\x00\x00\x00\x00\x01\x00"
    "\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00";
static const char fx_np_f8[] =  /* 144 bytes */
    "\x93NUMPY\x01\x00v\x00{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }      "
    "                                                      \x0a\x00\x00\x00\x00\x00\x00\xf0"
    "\x3f\x00\x00\x00\x00\x00\x00\x00@";
static const char fx_np_struct[] =  /* 144 bytes */
    "\x93NUMPY\x01\x00v\x00{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False,"
    " 'shape': (2,), }                                     \x0a\x00\x00\x00\x00\x00\x00\x00"
    "\x00\x00\x00\x00\x00\x00\x00\x00\x00";
static const char fx_npz_stored[] =  /* 773 bytes */
    "PK\x03\x04\x14\x00\x00\x00\x00\x00\x00\x00!\x00O\xe9\x00*\x98\x00\x00\x00\x98\x00\x00"
    "\x00\x05\x00\x14\x00" "a.npy\x01\x00\x10\x00\x98\x00\x00\x00\x00\x00\x00\x00\x98\x00\x00"
    "\x00\x00\x00\x00\x00\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 's"
    "hape': (2, 3), }                                                          \x0a\x00\x00"
    "\x00\x00\x00\x00\x80\x3f\x00\x00\x00@\x00\x00@@\x00\x00\x80@\x00\x00\xa0@PK\x03\x04\x14"
    "\x00\x00\x00\x00\x00\x00\x00!\x00t\xa8\xf3" "0\x98\x00\x00\x00\x98\x00\x00\x00\x05\x00"
    "\x14\x00" "b.npy\x01\x00\x10\x00\x98\x00\x00\x00\x00\x00\x00\x00\x98\x00\x00\x00\x00\x00"
    "\x00\x00\x93NUMPY\x01\x00v\x00{'descr': '<i8', 'fortran_order': False, 'shape': (3,),"
    " }                                                            \x0a\x01\x00\x00\x00\x00"
    "\x00\x00\x00\xfe\xff\xff\xff\xff\xff\xff\xff\x03\x00\x00\x00\x00\x00\x00\x00PK\x03\x04"
    "\x14\x00\x00\x00\x00\x00\x00\x00!\x00v\x0e\x13\x89\x81\x00\x00\x00\x81\x00\x00\x00\x05"
    "\x00\x14\x00" "c.npy\x01\x00\x10\x00\x81\x00\x00\x00\x00\x00\x00\x00\x81\x00\x00\x00\x00"
    "\x00\x00\x00\x93NUMPY\x01\x00v\x00{'descr': '|u1', 'fortran_order': False, 'shape': ("
    "), }                                                              \x0a\x07PK\x01\x02\x14"
    "\x03\x14\x00\x00\x00\x00\x00\x00\x00!\x00O\xe9\x00*\x98\x00\x00\x00\x98\x00\x00\x00\x05"
    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x01\x00\x00\x00\x00" "a.npyPK\x01\x02"
    "\x14\x03\x14\x00\x00\x00\x00\x00\x00\x00!\x00t\xa8\xf3" "0\x98\x00\x00\x00\x98\x00\x00"
    "\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x01\xcf\x00\x00\x00" "b.npyP"
    "K\x01\x02\x14\x03\x14\x00\x00\x00\x00\x00\x00\x00!\x00v\x0e\x13\x89\x81\x00\x00\x00\x81"
    "\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x01\x9e\x01\x00\x00" "c"
    ".npyPK\x05\x06\x00\x00\x00\x00\x03\x00\x03\x00\x99\x00\x00\x00V\x02\x00\x00\x00\x00";
static const char fx_npz_deflated[] =  /* 570 bytes */
    "PK\x03\x04\x14\x00\x00\x00\x08\x00\x00\x00!\x00O\xe9\x00*U\x00\x00\x00\x98\x00\x00\x00"
    "\x05\x00\x14\x00" "a.npy\x01\x00\x10\x00\x98\x00\x00\x00\x00\x00\x00\x00U\x00\x00\x00"
    "\x00\x00\x00\x00\x9b\xec\x17\xea\x1b\x10\xc9\xc8P\xc6P\xad\x9e\x92Z\x9c\x5c\xa4n\xa5\xa0"
    "n\x93" "f\xa2\xae\xa3\xa0\x9e\x96_TR\x94\x98\x17\x9f_\x94\x92\x0a\x12wK\xcc)N\x05\x8a"
    "\x17g$\x16\xa4\x02\xf9\x1a" "F:\x0a\xc6\x9a:\x0a\xb5\x0a" "d\x03.\x06" "0h\xb0\x07\x12"
    "\x0e@\x04\xc4\x0d@\xbc\xc0\x01\x00PK\x03\x04\x14\x00\x00\x00\x08\x00\x00\x00!\x00t\xa8"
    "\xf3" "0N\x00\x00\x00\x98\x00\x00\x00\x05\x00\x14\x00" "b.npy\x01\x00\x10\x00\x98\x00"
    "\x00\x00\x00\x00\x00\x00N\x00\x00\x00\x00\x00\x00\x00\x9b\xec\x17\xea\x1b\x10\xc9\xc8"
    "P\xc6P\xad\x9e\x92Z\x9c\x5c\xa4n\xa5\xa0n\x93i\xa1\xae\xa3\xa0\x9e\x96_TR\x94\x98\x17"
    "\x9f_\x94\x92\x0a\x12wK\xcc)N\x05\x8a\x17g$\x16\xa4\x02\xf9\x1a\xc6:\x9a:\x0a\xb5\x0a"
    "\x14\x00.F\x06\x08\xf8\xf7\x1f\x02\x98\xa1|\x00PK\x03\x04\x14\x00\x00\x00\x08\x00\x00"
    "\x00!\x00v\x0e\x13\x89" "C\x00\x00\x00\x81\x00\x00\x00\x05\x00\x14\x00" "c.npy\x01\x00"
    "\x10\x00\x81\x00\x00\x00\x00\x00\x00\x00" "C\x00\x00\x00\x00\x00\x00\x00\x9b\xec\x17\xea"
    "\x1b\x10\xc9\xc8P\xc6P\xad\x9e\x92Z\x9c\x5c\xa4n\xa5\xa0^Sj\xa8\xae\xa3\xa0\x9e\x96_T"
    "R\x94\x98\x17\x9f_\x94\x92\x0a\x12wK\xcc)N\x05\x8a\x17g$\x16\xa4\x02\xf9\x1a\x9a:\x0a"
    "\xb5\x0a\x14\x01.v\x00PK\x01\x02\x14\x03\x14\x00\x00\x00\x08\x00\x00\x00!\x00O\xe9\x00"
    "*U\x00\x00\x00\x98\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x01"
    "\x00\x00\x00\x00" "a.npyPK\x01\x02\x14\x03\x14\x00\x00\x00\x08\x00\x00\x00!\x00t\xa8\xf3"
    "0N\x00\x00\x00\x98\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x01"
    "\x8c\x00\x00\x00" "b.npyPK\x01\x02\x14\x03\x14\x00\x00\x00\x08\x00\x00\x00!\x00v\x0e\x13"
    "\x89" "C\x00\x00\x00\x81\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80"
    "\x01\x11\x01\x00\x00" "c.npyPK\x05\x06\x00\x00\x00\x00\x03\x00\x03\x00\x99\x00\x00\x00"
    "\x8b\x01\x00\x00\x00\x00";
static const char fx_npz_dup[] =  /* 454 bytes */
    "PK\x03\x04\x14\x00\x00\x00\x00\x00\x00\x00!\x00" "b\x02" "e_\x82\x00\x00\x00\x82\x00\x00"
    "\x00\x05\x00\x00\x00x.npy\x93NUMPY\x01\x00v\x00{'descr': '|u1', 'fortran_order': Fals"
    "e, 'shape': (2,), }                                                            \x0a\x01"
    "\x02PK\x03\x04\x14\x00\x00\x00\x00\x00\x00\x00!\x00" "b\x02" "e_\x82\x00\x00\x00\x82\x00"
    "\x00\x00\x05\x00\x00\x00x.npy\x93NUMPY\x01\x00v\x00{'descr': '|u1', 'fortran_order': "
    "False, 'shape': (2,), }                                                            \x0a"
    "\x01\x02PK\x01\x02\x14\x03\x14\x00\x00\x00\x00\x00\x00\x00!\x00" "b\x02" "e_\x82\x00\x00"
    "\x00\x82\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x01\x00\x00\x00"
    "\x00x.npyPK\x01\x02\x14\x03\x14\x00\x00\x00\x00\x00\x00\x00!\x00" "b\x02" "e_\x82\x00"
    "\x00\x00\x82\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x01\xa5\x00"
    "\x00\x00x.npyPK\x05\x06\x00\x00\x00\x00\x02\x00\x02\x00" "f\x00\x00\x00J\x01\x00\x00\x00"
    "\x00";
static const char fx_npz_notnpy[] =  /* 339 bytes */
    "PK\x03\x04\x14\x00\x00\x00\x00\x00\x00\x00!\x00" "b\x02" "e_\x82\x00\x00\x00\x82\x00\x00"
    "\x00\x05\x00\x00\x00x.npy\x93NUMPY\x01\x00v\x00{'descr': '|u1', 'fortran_order': Fals"
    "e, 'shape': (2,), }                                                            \x0a\x01"
    "\x02PK\x03\x04\x14\x00\x00\x00\x00\x00\x00\x00!\x00\x86\xa6\x10" "6\x05\x00\x00\x00\x05"
    "\x00\x00\x00\x0a\x00\x00\x00readme.txthelloPK\x01\x02\x14\x03\x14\x00\x00\x00\x00\x00"
    "\x00\x00!\x00" "b\x02" "e_\x82\x00\x00\x00\x82\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00"
    "\x00\x00\x00\x00\x00\x80\x01\x00\x00\x00\x00x.npyPK\x01\x02\x14\x03\x14\x00\x00\x00\x00"
    "\x00\x00\x00!\x00\x86\xa6\x10" "6\x05\x00\x00\x00\x05\x00\x00\x00\x0a\x00\x00\x00\x00"
    "\x00\x00\x00\x00\x00\x00\x00\x80\x01\xa5\x00\x00\x00readme.txtPK\x05\x06\x00\x00\x00\x00"
    "\x02\x00\x02\x00k\x00\x00\x00\xd2\x00\x00\x00\x00\x00";
static const char fx_npz_bzip2[] =  /* 225 bytes */
    "PK\x03\x04.\x00\x00\x00\x0c\x00\x00\x00!\x00" "b\x02" "e_u\x00\x00\x00\x82\x00\x00\x00"
    "\x05\x00\x00\x00x.npyBZh91AY&SY\xe6\x81\x1aq\x00\x00%_\xa0p\x10@\xe4" "0P\x01\x03" "B"
    " \xaf" "E\xdf\x0e\x08\x00 \x00TE\x1e\x90\xd3" "F\x10h4\xd0" "b=!\x14\xf2OH\x03" "CA\xa6"
    "\x81\x91\xea\x03\xdbMV{8V\x0c\x02\x12\xb6\x0f\x14X\x01\xb0\xef\xc1\x1b" "2\xe4\x17}\xa3"
    "\xb5\x8b\xee\x82\x15H\xa8\x81\x86\x01\x09\x0c\xb5\x22\x01$&d\x06\xda\x7f\x8b\xb9\x22\x9c"
    "(Hs@\x8d" "8\x80PK\x01\x02.\x03.\x00\x00\x00\x0c\x00\x00\x00!\x00" "b\x02" "e_u\x00\x00"
    "\x00\x82\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x01\x00\x00\x00"
    "\x00x.npyPK\x05\x06\x00\x00\x00\x00\x01\x00\x01\x00" "3\x00\x00\x00\x98\x00\x00\x00\x00"
    "\x00";
static const char fx_npz_badnpy[] =  /* 237 bytes */
    "PK\x03\x04\x14\x00\x00\x00\x00\x00\x00\x00!\x00\x1d\x1a\xe0o\x81\x00\x00\x00\x81\x00\x00"
    "\x00\x05\x00\x00\x00x.npy\x93NUMPY\x01\x00v\x00{'descr': '|u1', 'fortran_order': Fals"
    "e, 'shape': (2,), }                                                            \x0a\x01"
    "PK\x01\x02\x14\x03\x14\x00\x00\x00\x00\x00\x00\x00!\x00\x1d\x1a\xe0o\x81\x00\x00\x00\x81"
    "\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x01\x00\x00\x00\x00x"
    ".npyPK\x05\x06\x00\x00\x00\x00\x01\x00\x01\x00" "3\x00\x00\x00\xa4\x00\x00\x00\x00\x00";
static const char fx_npz_streamed[] =  /* 642 bytes: savez_compressed to a non-seekable stream */
    "PK\x03\x04\x14\x00\x08\x00\x08\x00\x00\x00!\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
    "\x00\x00\x05\x00\x14\x00" "a.npy\x01\x00\x10\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
    "\x00\x00\x00\x00\x00\x00\x9b\xec\x17\xea\x1b\x10\xc9\xc8P\xc6P\xad\x9e\x92Z\x9c\x5c\xa4"
    "n\xa5\xa0n\x93" "f\xa2\xae\xa3\xa0\x9e\x96_TR\x94\x98\x17\x9f_\x94\x92\x0a\x12wK\xcc)"
    "N\x05\x8a\x17g$\x16\xa4\x02\xf9\x1a" "F:\x0a\xc6\x9a:\x0a\xb5\x0a" "d\x03.\x06" "0h\xb0"
    "\x07\x12\x0e@\x04\xc4\x0d@\xbc\xc0\x01\x00PK\x07\x08O\xe9\x00*U\x00\x00\x00\x00\x00\x00"
    "\x00\x98\x00\x00\x00\x00\x00\x00\x00PK\x03\x04\x14\x00\x08\x00\x08\x00\x00\x00!\x00\x00"
    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x05\x00\x14\x00" "b.npy\x01\x00\x10\x00\x00"
    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x9b\xec\x17\xea\x1b\x10\xc9"
    "\xc8P\xc6P\xad\x9e\x92Z\x9c\x5c\xa4n\xa5\xa0n\x93i\xa1\xae\xa3\xa0\x9e\x96_TR\x94\x98"
    "\x17\x9f_\x94\x92\x0a\x12wK\xcc)N\x05\x8a\x17g$\x16\xa4\x02\xf9\x1a\xc6:\x9a:\x0a\xb5"
    "\x0a\x14\x00.F\x06\x08\xf8\xf7\x1f\x02\x98\xa1|\x00PK\x07\x08t\xa8\xf3" "0N\x00\x00\x00"
    "\x00\x00\x00\x00\x98\x00\x00\x00\x00\x00\x00\x00PK\x03\x04\x14\x00\x08\x00\x08\x00\x00"
    "\x00!\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x05\x00\x14\x00" "c.npy\x01"
    "\x00\x10\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x9b\xec\x17"
    "\xea\x1b\x10\xc9\xc8P\xc6P\xad\x9e\x92Z\x9c\x5c\xa4n\xa5\xa0^Sj\xa8\xae\xa3\xa0\x9e\x96"
    "_TR\x94\x98\x17\x9f_\x94\x92\x0a\x12wK\xcc)N\x05\x8a\x17g$\x16\xa4\x02\xf9\x1a\x9a:\x0a"
    "\xb5\x0a\x14\x01.v\x00PK\x07\x08v\x0e\x13\x89" "C\x00\x00\x00\x00\x00\x00\x00\x81\x00"
    "\x00\x00\x00\x00\x00\x00PK\x01\x02\x14\x03\x14\x00\x08\x00\x08\x00\x00\x00!\x00O\xe9\x00"
    "*U\x00\x00\x00\x98\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x01"
    "\x00\x00\x00\x00" "a.npyPK\x01\x02\x14\x03\x14\x00\x08\x00\x08\x00\x00\x00!\x00t\xa8\xf3"
    "0N\x00\x00\x00\x98\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x01"
    "\xa4\x00\x00\x00" "b.npyPK\x01\x02\x14\x03\x14\x00\x08\x00\x08\x00\x00\x00!\x00v\x0e\x13"
    "\x89" "C\x00\x00\x00\x81\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80"
    "\x01" "A\x01\x00\x00" "c.npyPK\x05\x06\x00\x00\x00\x00\x03\x00\x03\x00\x99\x00\x00\x00"
    "\xd3\x01\x00\x00\x00\x00";

/* ---- helpers ------------------------------------------------------------------------------ */
static const pv_dtype all_dtypes[] = { PV_F32, PV_F16, PV_I64, PV_I32, PV_I8, PV_U8, PV_BOOL };

/* A tensor of dtype/rank with dims 1,2,3,1,2,3,... and a byte pattern (bools 0/1). */
static pvc_tensor make_tensor(pv_dtype dt, int rank, int seed)
{
    pvc_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    t.rank = rank;
    for (int i = 0; i < rank; i++) t.dims[i] = i % 3 + 1;
    size_t n = pvc_nbytes(&t);
    unsigned char *d = pvc_malloc_aligned(n);
    assert_non_null(d);
    for (size_t i = 0; i < n; i++)
        d[i] = dt == PV_BOOL ? (unsigned char)((i + (size_t)seed) % 2) : (unsigned char)(i * 37 + 11 + (size_t)seed);
    t.data = d;
    return t;
}

static void assert_same_tensor(const pvc_tensor *a, const pvc_tensor *b)
{
    assert_int_equal(a->dtype, b->dtype);
    assert_int_equal(a->rank, b->rank);
    for (int i = 0; i < a->rank; i++) assert_int_equal(a->dims[i], b->dims[i]);
    size_t n = pvc_nbytes(a);
    if (n) assert_memory_equal(a->data, b->data, n);
}

static void expect_shape(const pvc_tensor *t, pv_dtype dt, int rank, const int64_t *dims)
{
    assert_int_equal(t->dtype, dt);
    assert_int_equal(t->rank, rank);
    for (int i = 0; i < rank; i++) assert_int_equal(t->dims[i], dims[i]);
    for (int i = 0; i < PV_MAX_RANK; i++) assert_int_equal(t->strides[i], 0);
}

static void expect_msg(const pvc_msg *m, const char *needle)
{
    if (!strstr(m->text, needle)) fail_msg("message '%s' lacks '%s'", m->text, needle);
}

static char *temp_path(void)
{
    char *p = strdup("/tmp/pvio_test_XXXXXX");
    int fd = mkstemp(p);
    assert_true(fd >= 0);
    close(fd);
    return p;
}

/* ---- npy round trips ---------------------------------------------------------------------- */
static void test_npy_roundtrip_all(void **state)
{
    (void)state;
    for (size_t d = 0; d < PVC_COUNTOF(all_dtypes); d++) {
        for (int rank = 0; rank <= PV_MAX_RANK; rank++) {
            pvc_tensor t = make_tensor(all_dtypes[d], rank, rank);
            void *buf = NULL;
            size_t len = 0;
            pvc_msg msg;
            assert_int_equal(pvio_npy_serialize(&t, &buf, &len, &msg), PV_OK);
            size_t hdr = len - pvc_nbytes(&t);
            assert_int_equal(hdr % 64, 0);                 /* data aligned like NumPy's */
            assert_memory_equal(buf, "\x93NUMPY\x01\x00", 8);
            pvc_tensor back;
            assert_int_equal(pvio_npy_parse(buf, len, &back, &msg), PV_OK);
            assert_null(back.name);
            assert_same_tensor(&t, &back);
            assert_int_equal((uintptr_t)back.data % 64, 0);
            pvio_tensor_free_data(&back);
            assert_null(back.data);
            pvc_free(buf);
            pvio_tensor_free_data(&t);
        }
    }
}

static void test_npy_roundtrip_file(void **state)
{
    (void)state;
    char *path = temp_path();
    pvc_msg msg;
    for (size_t d = 0; d < PVC_COUNTOF(all_dtypes); d++) {
        pvc_tensor t = make_tensor(all_dtypes[d], (int)d % 4 + 1, 3);
        assert_int_equal(pvio_npy_write_file(path, &t, &msg), PV_OK);
        pvc_tensor back;
        assert_int_equal(pvio_npy_read_file(path, &back, &msg), PV_OK);
        assert_same_tensor(&t, &back);
        pvio_tensor_free_data(&back);
        pvio_tensor_free_data(&t);
    }
    unlink(path);
    pvc_tensor none;
    assert_int_equal(pvio_npy_read_file(path, &none, &msg), PV_EINPUT);
    expect_msg(&msg, "cannot open");
    assert_null(none.data);
    assert_int_equal(pvio_npy_read_file("/tmp", &none, &msg), PV_EINPUT);
    pvc_tensor t = make_tensor(PV_F32, 1, 0);
    assert_int_equal(pvio_npy_write_file("/nonexistent-dir/x.npy", &t, &msg), PV_EINPUT);
    expect_msg(&msg, "cannot create");
    pvio_tensor_free_data(&t);
    free(path);
}

static void test_npy_empty_and_strided(void **state)
{
    (void)state;
    pvc_msg msg;
    void *buf;
    size_t len;
    pvc_tensor back;
    /* zero-size arrays: data pointer may be NULL on write, non-NULL on read */
    pvc_tensor e = { .dtype = PV_I32, .rank = 3, .dims = { 2, 0, 5 } };
    assert_int_equal(pvio_npy_serialize(&e, &buf, &len, &msg), PV_OK);
    assert_int_equal(pvio_npy_parse(buf, len, &back, &msg), PV_OK);
    expect_shape(&back, PV_I32, 3, e.dims);
    assert_non_null(back.data);
    pvio_tensor_free_data(&back);
    pvc_free(buf);

    /* a transposed 2x3 view of a row-major 3x2 array serializes in C order */
    int32_t src[6] = { 0, 1, 2, 3, 4, 5 };            /* 3x2: [[0,1],[2,3],[4,5]] */
    pvc_tensor v = { .dtype = PV_I32, .rank = 2, .dims = { 2, 3 }, .strides = { 4, 8 }, .data = src };
    assert_int_equal(pvio_npy_serialize(&v, &buf, &len, &msg), PV_OK);
    assert_int_equal(pvio_npy_parse(buf, len, &back, &msg), PV_OK);
    const int32_t want[6] = { 0, 2, 4, 1, 3, 5 };
    assert_memory_equal(back.data, want, sizeof want);
    pvio_tensor_free_data(&back);
    pvc_free(buf);

    char *path = temp_path();
    assert_int_equal(pvio_npy_write_file(path, &v, &msg), PV_OK);
    assert_int_equal(pvio_npy_read_file(path, &back, &msg), PV_OK);
    assert_memory_equal(back.data, want, sizeof want);
    pvio_tensor_free_data(&back);
    unlink(path);
    free(path);
}

static void test_npy_write_refusals(void **state)
{
    (void)state;
    pvc_msg msg;
    void *buf = (void *)1;
    size_t len = 1;
    uint16_t h[2] = { 0 };
    pvc_tensor bf = { .dtype = PV_BF16, .rank = 1, .dims = { 2 }, .data = h };
    assert_int_equal(pvio_npy_serialize(&bf, &buf, &len, &msg), PV_EUNSUPPORTED);
    expect_msg(&msg, "bfloat16");
    assert_null(buf);
    assert_int_equal(len, 0);
    char *path = temp_path();
    assert_int_equal(pvio_npy_write_file(path, &bf, &msg), PV_EUNSUPPORTED);
    unlink(path);
    free(path);

    pvc_tensor t = { .dtype = PV_F32, .rank = 9, .data = h };
    assert_int_equal(pvio_npy_serialize(&t, &buf, &len, &msg), PV_EINPUT);
    expect_msg(&msg, "rank 9");
    t.rank = 2;
    t.dims[0] = 3;
    t.dims[1] = -1;
    assert_int_equal(pvio_npy_serialize(&t, &buf, &len, &msg), PV_EINPUT);
    expect_msg(&msg, "(3, -1)");
    t.dims[1] = INT64_MAX / 2;
    assert_int_equal(pvio_npy_serialize(&t, &buf, &len, &msg), PV_EINPUT);
    t.dims[1] = 1;
    t.data = NULL;
    assert_int_equal(pvio_npy_serialize(&t, &buf, &len, &msg), PV_EINPUT);
    expect_msg(&msg, "NULL");
    t.dtype = (pv_dtype)99;
    assert_int_equal(pvio_npy_serialize(&t, &buf, &len, &msg), PV_EINPUT);
}

/* ---- NumPy-written files ------------------------------------------------------------------ */
static pvc_tensor parse_ok(const char *buf, size_t len)
{
    pvc_tensor t;
    pvc_msg msg;
    pv_status s = pvio_npy_parse(buf, len, &t, &msg);
    if (s != PV_OK) fail_msg("parse failed: %s", msg.text);
    return t;
}

static void test_npy_numpy_dtypes(void **state)
{
    (void)state;
    pvc_tensor t = parse_ok(FX(np_f4_2x3));
    expect_shape(&t, PV_F32, 2, (int64_t[]){ 2, 3 });
    for (int i = 0; i < 6; i++) assert_true(((float *)t.data)[i] == 0.5f * (float)i);
    pvio_tensor_free_data(&t);

    t = parse_ok(FX(np_f2));
    expect_shape(&t, PV_F16, 1, (int64_t[]){ 4 });
    const float f2[4] = { 1.0f, -2.5f, 0.5f, 1024.0f };
    for (int i = 0; i < 4; i++) assert_true(pvc_f16_to_f32(((uint16_t *)t.data)[i]) == f2[i]);
    pvio_tensor_free_data(&t);

    t = parse_ok(FX(np_i8));
    expect_shape(&t, PV_I64, 2, (int64_t[]){ 2, 2 });
    const int64_t i8[4] = { -1, (int64_t)1 << 40, 3, -((int64_t)1 << 62) };
    assert_memory_equal(t.data, i8, sizeof i8);
    pvio_tensor_free_data(&t);

    t = parse_ok(FX(np_i4));
    const int32_t i4[3] = { -7, 0, 2147483647 };
    expect_shape(&t, PV_I32, 1, (int64_t[]){ 3 });
    assert_memory_equal(t.data, i4, sizeof i4);
    pvio_tensor_free_data(&t);

    t = parse_ok(FX(np_i1));
    const int8_t i1[4] = { -128, 127, 0, -1 };
    expect_shape(&t, PV_I8, 1, (int64_t[]){ 4 });
    assert_memory_equal(t.data, i1, sizeof i1);
    pvio_tensor_free_data(&t);

    t = parse_ok(FX(np_u1));
    expect_shape(&t, PV_U8, 1, (int64_t[]){ 3 });
    assert_memory_equal(t.data, "\x00\xff\x07", 3);
    pvio_tensor_free_data(&t);

    t = parse_ok(FX(np_b1));
    expect_shape(&t, PV_BOOL, 1, (int64_t[]){ 3 });
    assert_memory_equal(t.data, "\x01\x00\x01", 3);
    pvio_tensor_free_data(&t);

    t = parse_ok(FX(np_scalar));
    expect_shape(&t, PV_F32, 0, NULL);
    assert_true(*(float *)t.data == 3.5f);
    pvio_tensor_free_data(&t);

    t = parse_ok(FX(np_empty));
    expect_shape(&t, PV_F32, 2, (int64_t[]){ 0, 3 });
    pvio_tensor_free_data(&t);
}

static void test_npy_numpy_versions(void **state)
{
    (void)state;
    const int32_t want[4] = { 0, 1, 2, 3 };
    pvc_tensor t = parse_ok(FX(np_v2));
    assert_int_equal(fx_np_v2[6], 2);
    expect_shape(&t, PV_I32, 1, (int64_t[]){ 4 });
    assert_memory_equal(t.data, want, sizeof want);
    pvio_tensor_free_data(&t);
    t = parse_ok(FX(np_v3));
    assert_int_equal(fx_np_v3[6], 3);
    assert_memory_equal(t.data, want, sizeof want);
    pvio_tensor_free_data(&t);

    /* Our own v1 output rewritten with 2.0 / 3.0 preambles (4-byte header length). */
    for (size_t d = 0; d < PVC_COUNTOF(all_dtypes); d++) {
        pvc_tensor src = make_tensor(all_dtypes[d], 3, 1);
        void *buf;
        size_t len;
        pvc_msg msg;
        assert_int_equal(pvio_npy_serialize(&src, &buf, &len, &msg), PV_OK);
        unsigned char *v = malloc(len + 2);
        const unsigned char *b = buf;
        size_t hlen = (size_t)b[8] | (size_t)b[9] << 8;
        for (int major = 2; major <= 3; major++) {
            memcpy(v, b, 8);
            v[6] = (unsigned char)major;
            v[8] = (unsigned char)(hlen & 0xff);
            v[9] = (unsigned char)(hlen >> 8);
            v[10] = v[11] = 0;
            memcpy(v + 12, b + 10, len - 10);
            pvc_tensor back;
            assert_int_equal(pvio_npy_parse(v, len + 2, &back, &msg), PV_OK);
            assert_same_tensor(&src, &back);
            pvio_tensor_free_data(&back);
        }
        free(v);
        pvc_free(buf);
        pvio_tensor_free_data(&src);
    }
}

static void test_npy_numpy_byteorder_fortran(void **state)
{
    (void)state;
    pvc_tensor t = parse_ok(FX(np_be_f4));
    expect_shape(&t, PV_F32, 2, (int64_t[]){ 3, 2 });
    for (int i = 0; i < 6; i++) assert_true(((float *)t.data)[i] == (float)i);
    pvio_tensor_free_data(&t);

    t = parse_ok(FX(np_be_i8));
    const int64_t i8[3] = { 1, -2, 3 };
    assert_memory_equal(t.data, i8, sizeof i8);
    pvio_tensor_free_data(&t);

    t = parse_ok(FX(np_be_f2));
    assert_true(pvc_f16_to_f32(((uint16_t *)t.data)[0]) == 1.0f);
    assert_true(pvc_f16_to_f32(((uint16_t *)t.data)[1]) == -2.5f);
    pvio_tensor_free_data(&t);

    /* Fortran order: arange(24).reshape(2,3,4) stored column-major comes back row-major. */
    t = parse_ok(FX(np_fortran_i4));
    expect_shape(&t, PV_I32, 3, (int64_t[]){ 2, 3, 4 });
    for (int i = 0; i < 24; i++) assert_int_equal(((int32_t *)t.data)[i], i);
    pvio_tensor_free_data(&t);

    t = parse_ok(FX(np_fortran_be_f4));
    expect_shape(&t, PV_F32, 2, (int64_t[]){ 2, 3 });
    for (int i = 0; i < 6; i++) assert_true(((float *)t.data)[i] == (float)i);
    pvio_tensor_free_data(&t);
}

static void test_npy_numpy_refused(void **state)
{
    (void)state;
    pvc_tensor t;
    pvc_msg msg;
    assert_int_equal(pvio_npy_parse(FX(np_f8), &t, &msg), PV_EUNSUPPORTED);
    expect_msg(&msg, "'<f8' (float64)");
    assert_null(t.data);
    assert_int_equal(pvio_npy_parse(FX(np_struct), &t, &msg), PV_EUNSUPPORTED);
    expect_msg(&msg, "structured");
}

/* ---- hostile npy -------------------------------------------------------------------------- */
static void test_npy_truncations_and_flips(void **state)
{
    (void)state;
    const char *f = fx_np_fortran_i4;
    size_t n = sizeof fx_np_fortran_i4 - 1;
    pvc_msg msg;
    pvc_tensor t;
    /* every proper prefix is an error; so is one extra byte */
    for (size_t k = 0; k < n; k++) {
        unsigned char *cp = malloc(k ? k : 1);       /* exact-size copy: ASan sees over-reads */
        memcpy(cp, f, k);
        pv_status s = pvio_npy_parse(cp, k, &t, &msg);
        if (s == PV_OK) fail_msg("prefix of %zu bytes parsed", k);
        assert_null(t.data);
        free(cp);
    }
    unsigned char *longer = malloc(n + 1);
    memcpy(longer, f, n);
    longer[n] = 0;
    assert_int_equal(pvio_npy_parse(longer, n + 1, &t, &msg), PV_EFORMAT);
    expect_msg(&msg, "needs 96 data bytes");
    free(longer);
    assert_int_equal(pvio_npy_parse(NULL, 0, &t, &msg), PV_EFORMAT);
    assert_int_equal(pvio_npy_parse(NULL, 5, &t, &msg), PV_EINPUT);

    /* every byte set to 0x00, 0xff and each header byte to '(' ')' ',' '}': no crash, no leak */
    const unsigned char subst[] = { 0x00, 0xff, '(', ')', ',', '}', '9', '-' };
    unsigned char *cp = malloc(n);
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < sizeof subst; j++) {
            if (j >= 2 && i >= 128) break;
            memcpy(cp, f, n);
            cp[i] = subst[j];
            if (pvio_npy_parse(cp, n, &t, &msg) == PV_OK) pvio_tensor_free_data(&t);
            else assert_null(t.data);
        }
    }
    free(cp);
}

typedef struct bad_case {
    int         major;      /* preamble version; 0 = raw bytes in dict (no preamble) */
    const char *dict;
    size_t      dict_len;   /* 0: strlen */
    size_t      data;       /* zero bytes after the header */
    long long   hlen;       /* header length field; -1: the real one */
    pv_status   want;
    const char *needle;
} bad_case;

#define HDR(d) "{'descr': '<f4', 'fortran_order': False, 'shape': " d ", }"

static const bad_case bad_cases[] = {
    { 0, "\x93NUMPZ\x01\x00\x10\x00{}", 0, 0, -1, PV_EFORMAT, "bad magic" },
    { 0, "PK\x03\x04 not npy at all", 0, 0, -1, PV_EFORMAT, "bad magic" },
    { 0, "\x93NUMPY\x01", 7, 0, -1, PV_EFORMAT, "truncated" },
    { 0, "\x93NUMPY\x02\x00\x10\x00", 10, 0, -1, PV_EFORMAT, "truncated" },
    { 4, HDR("(2,)"), 0, 8, -1, PV_EUNSUPPORTED, "version 4.0" },
    { 0, "\x93NUMPY\x01\x01\x02\x00{}", 12, 0, -1, PV_EUNSUPPORTED, "version 1.1" },
    { 0, "\x93NUMPY\x00\x00\x02\x00{}", 12, 0, -1, PV_EUNSUPPORTED, "version 0.0" },
    { 1, HDR("(2,)"), 0, 8, 60000, PV_EFORMAT, "runs past the end" },
    { 2, HDR("(2,)"), 0, 8, 0xffffffffLL, PV_EFORMAT, "limit" },
    { 3, HDR("(2,)"), 0, 8, 2000000, PV_EFORMAT, "limit" },
    { 1, "", 0, 0, -1, PV_EFORMAT, "expected '{'" },
    { 1, "   \n", 0, 0, -1, PV_EFORMAT, "expected '{'" },
    { 1, "[1, 2]", 0, 0, -1, PV_EFORMAT, "expected '{'" },
    { 1, "{'fortran_order': False, 'shape': (2,), }", 0, 8, -1, PV_EFORMAT, "missing the key 'descr'" },
    { 1, "{'descr': '<f4', 'fortran_order': False}", 0, 8, -1, PV_EFORMAT, "missing the key 'shape'" },
    { 1, "{'descr': '<f4', 'shape': (2,)}", 0, 8, -1, PV_EFORMAT, "missing the key 'fortran_order'" },
    { 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'foo': 1}", 0, 8, -1, PV_EFORMAT, "unknown key 'foo'" },
    { 1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", 0, 8, -1, PV_EFORMAT, "repeats the key 'descr'" },
    { 1, "{descr: '<f4', 'fortran_order': False, 'shape': (2,)}", 0, 8, -1, PV_EFORMAT, "a quoted key" },
    { 1, "{'descr' '<f4', 'fortran_order': False, 'shape': (2,)}", 0, 8, -1, PV_EFORMAT, "':'" },
    { 1, "{'descr': '<f4", 0, 0, -1, PV_EFORMAT, "quoted string for 'descr'" },
    { 1, "{'descr", 0, 0, -1, PV_EFORMAT, "a quoted key" },
    { 1, "{'descr': 4, 'fortran_order': False, 'shape': (2,)}", 0, 8, -1, PV_EFORMAT, "quoted string for 'descr'" },
    { 1, "{'descr': '<f4<f4<f4<f4<f4<f4<f4<f4<f4<f4<f4<f4<f4', 'fortran_order': False, 'shape': (2,)}", 0, 8, -1, PV_EFORMAT, "short quoted string" },
    { 1, "{'descr': '<f\\x34', 'fortran_order': False, 'shape': (2,)}", 0, 8, -1, PV_EFORMAT, "'descr'" },
    { 1, "{'descr': '', 'fortran_order': False, 'shape': (2,)}", 0, 8, -1, PV_EUNSUPPORTED, "dtype ''" },
    { 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,)}", 0, 16, -1, PV_EUNSUPPORTED, "float64" },
    { 1, "{'descr': '<u2', 'fortran_order': False, 'shape': (2,)}", 0, 4, -1, PV_EUNSUPPORTED, "uint16" },
    { 1, "{'descr': '|O', 'fortran_order': False, 'shape': (2,)}", 0, 16, -1, PV_EUNSUPPORTED, "object" },
    { 1, "{'descr': '<U3', 'fortran_order': False, 'shape': (2,)}", 0, 24, -1, PV_EUNSUPPORTED, "string" },
    { 1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}", 0, 8, -1, PV_EUNSUPPORTED, "structured" },
    { 1, "{'descr': '<f4', 'fortran_order': 'yes', 'shape': (2,)}", 0, 8, -1, PV_EFORMAT, "True or False" },
    { 1, "{'descr': '<f4', 'fortran_order': , 'shape': (2,)}", 0, 8, -1, PV_EFORMAT, "True or False" },
    { 1, HDR("[2, 3]"), 0, 24, -1, PV_EFORMAT, "a tuple for 'shape'" },
    { 1, HDR("(3, -1)"), 0, 0, -1, PV_EFORMAT, "npy: shape (3, -1) has a negative dimension" },
    { 1, HDR("(-5,)"), 0, 0, -1, PV_EFORMAT, "negative" },
    { 1, HDR("(4611686018427387904, 4611686018427387904)"), 0, 0, -1, PV_EFORMAT, "overflows" },
    { 1, HDR("(2305843009213693952,)"), 0, 0, -1, PV_EFORMAT, "overflows" },
    { 1, HDR("(1099511627776,)"), 0, 0, -1, PV_EUNSUPPORTED, "limit" },
    { 1, HDR("(99999999999999999999,)"), 0, 0, -1, PV_EFORMAT, "64 bits" },
    { 1, HDR("(1, 1, 1, 1, 1, 1, 1, 1, 1)"), 0, 4, -1, PV_EUNSUPPORTED, "more than 8" },
    { 1, HDR("('a',)"), 0, 4, -1, PV_EFORMAT, "an integer" },
    { 1, HDR("(2,, 3)"), 0, 24, -1, PV_EFORMAT, "an integer" },
    { 1, HDR("(2 3)"), 0, 24, -1, PV_EFORMAT, "',' or ')'" },
    { 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3", 0, 0, -1, PV_EFORMAT, "',' or ')'" },
    { 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x", 0, 8, -1, PV_EFORMAT, "after the closing" },
    { 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", 0, 8, -1, PV_EFORMAT, "',' or '}'" },
    { 1, "{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}", 0, 8, -1, PV_EFORMAT, "',' or '}'" },
    { 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}\0\0", 58, 8, -1, PV_EFORMAT, "after the closing" },
    { 1, "{'descr': '<\0f4', 'fortran_order': False, 'shape': (2,)}", 57, 8, -1, PV_EFORMAT, "'descr'" },
    { 1, HDR("(4,)"), 0, 12, -1, PV_EFORMAT, "needs 16 data bytes, the truncated data has 12" },
    { 1, HDR("(4,)"), 0, 20, -1, PV_EFORMAT, "needs 16 data bytes, the data has 20" },
    { 1, HDR("()"), 0, 0, -1, PV_EFORMAT, "needs 4 data bytes" },
};

/* Builds preamble + dict + zero data into out; returns the length. */
static size_t build_case(const bad_case *c, unsigned char *out)
{
    size_t dl = c->dict_len ? c->dict_len : strlen(c->dict);
    if (c->major == 0) { memcpy(out, c->dict, dl); return dl; }
    size_t pre = c->major == 1 ? 10 : 12;
    unsigned long long hl = c->hlen >= 0 ? (unsigned long long)c->hlen : dl;
    memcpy(out, "\x93NUMPY", 6);
    out[6] = (unsigned char)c->major;
    out[7] = 0;
    for (size_t i = 0; i < pre - 8; i++) out[8 + i] = (unsigned char)(hl >> (8 * i));
    memcpy(out + pre, c->dict, dl);
    memset(out + pre + dl, 0, c->data);
    return pre + dl + c->data;
}

static void test_npy_malformed_headers(void **state)
{
    (void)state;
    assert_true(PVC_COUNTOF(bad_cases) >= 30);
    for (size_t i = 0; i < PVC_COUNTOF(bad_cases); i++) {
        unsigned char tmp[512];
        size_t n = build_case(&bad_cases[i], tmp);
        unsigned char *cp = malloc(n);
        memcpy(cp, tmp, n);
        pvc_tensor t;
        pvc_msg msg;
        memset(&msg, 0, sizeof msg);
        pv_status s = pvio_npy_parse(cp, n, &t, &msg);
        free(cp);
        if (s != bad_cases[i].want || !strstr(msg.text, bad_cases[i].needle))
            fail_msg("case %zu: status %d (want %d), message '%s' (want '%s')", i, (int)s,
                     (int)bad_cases[i].want, msg.text, bad_cases[i].needle);
        assert_null(t.data);
        assert_true(strncmp(msg.text, "npy: ", 5) == 0);
    }
    /* The same lexer accepts what older writers emitted: double quotes, 'L' suffixes, no
     * trailing comma, '|' and '=' byte orders, tabs. */
    static const char *const good[] = {
        "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2L,)}",
        "{'shape': (2,), 'fortran_order': False, 'descr': '=f4'}",
        "{\t'descr':'<f4','fortran_order':False,'shape':(1, 2),}\n",
        "{'descr': 'f4', 'fortran_order': True, 'shape': (2)}   \n",
    };
    for (size_t i = 0; i < PVC_COUNTOF(good); i++) {
        bad_case c = { 1, good[i], 0, 8, -1, PV_OK, "" };
        unsigned char tmp[256];
        size_t n = build_case(&c, tmp);
        pvc_tensor t;
        pvc_msg msg;
        if (pvio_npy_parse(tmp, n, &t, &msg) != PV_OK) fail_msg("good %zu: %s", i, msg.text);
        assert_int_equal(t.dtype, PV_F32);
        assert_int_equal(pvc_numel(&t), 2);
        pvio_tensor_free_data(&t);
    }
}

static void test_npy_bool_normalized(void **state)
{
    (void)state;
    bad_case c = { 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", 0, 3, -1, PV_OK, "" };
    unsigned char tmp[128];
    size_t n = build_case(&c, tmp);
    tmp[n - 1] = 7;
    pvc_tensor t;
    pvc_msg msg;
    assert_int_equal(pvio_npy_parse(tmp, n, &t, &msg), PV_OK);
    assert_memory_equal(t.data, "\x00\x00\x01", 3);
    pvio_tensor_free_data(&t);
}

/* ---- npz ---------------------------------------------------------------------------------- */
static void check_numpy_npz(const pvio_arrays *a)
{
    assert_int_equal(a->n, 3);
    const pvio_array *x = pvio_arrays_find(a, "a");
    assert_non_null(x);
    assert_string_equal(x->t.name, "a");
    expect_shape(&x->t, PV_F32, 2, (int64_t[]){ 2, 3 });
    for (int i = 0; i < 6; i++) assert_true(((float *)x->t.data)[i] == (float)i);
    x = pvio_arrays_find(a, "b");
    assert_non_null(x);
    const int64_t b[3] = { 1, -2, 3 };
    expect_shape(&x->t, PV_I64, 1, (int64_t[]){ 3 });
    assert_memory_equal(x->t.data, b, sizeof b);
    x = pvio_arrays_find(a, "c");
    assert_non_null(x);
    expect_shape(&x->t, PV_U8, 0, NULL);
    assert_int_equal(*(uint8_t *)x->t.data, 7);
    assert_null(pvio_arrays_find(a, "d"));
    assert_null(pvio_arrays_find(a, "a.npy"));
}

static void test_npz_numpy(void **state)
{
    (void)state;
    pvio_arrays a;
    pvc_msg msg;
    assert_int_equal(pvio_npz_parse(FX(npz_stored), &a, &msg), PV_OK);
    check_numpy_npz(&a);
    pvio_arrays_free(&a);
    assert_null(a.a);
    assert_int_equal(a.n, 0);
    pvio_arrays_free(&a);                              /* zeroed: fine */
    assert_int_equal(pvio_npz_parse(FX(npz_deflated), &a, &msg), PV_OK);
    check_numpy_npz(&a);
    pvio_arrays_free(&a);
    /* written without seeking: data descriptors after each entry */
    assert_int_equal(pvio_npz_parse(FX(npz_streamed), &a, &msg), PV_OK);
    check_numpy_npz(&a);
    pvio_arrays_free(&a);
    pvio_arrays_free(NULL);
}

static void test_npz_roundtrip(void **state)
{
    (void)state;
    pvio_array arr[PVC_COUNTOF(all_dtypes) + 2];
    char names[PVC_COUNTOF(arr)][16];
    int n = 0;
    for (size_t d = 0; d < PVC_COUNTOF(all_dtypes); d++, n++) {
        snprintf(names[n], sizeof names[n], "arr_%d", n);
        arr[n].name = names[n];
        arr[n].t = make_tensor(all_dtypes[d], (int)(d * 5) % 9, n);
    }
    snprintf(names[n], sizeof names[n], "dir/empty");
    arr[n].name = names[n];
    arr[n++].t = (pvc_tensor){ .dtype = PV_F32, .rank = 2, .dims = { 0, 4 } };
    snprintf(names[n], sizeof names[n], "big");      /* compresses well */
    arr[n].name = names[n];
    arr[n].t = (pvc_tensor){ .dtype = PV_F32, .rank = 2, .dims = { 64, 64 } };
    arr[n].t.data = pvc_calloc(64 * 64, 4);
    n++;
    pvio_arrays set = { arr, n };
    char *path = temp_path();
    size_t lens[2];
    for (int deflate = 0; deflate <= 1; deflate++) {
        void *buf;
        size_t len;
        pvc_msg msg;
        assert_int_equal(pvio_npz_serialize(&set, deflate, &buf, &len, &msg), PV_OK);
        lens[deflate] = len;
        pvio_arrays back;
        assert_int_equal(pvio_npz_parse(buf, len, &back, &msg), PV_OK);
        assert_int_equal(back.n, n);
        for (int i = 0; i < n; i++) {
            assert_string_equal(back.a[i].name, arr[i].name);   /* archive order kept */
            assert_same_tensor(&arr[i].t, &back.a[i].t);
        }
        pvio_arrays_free(&back);
        /* deterministic output */
        void *buf2;
        size_t len2;
        assert_int_equal(pvio_npz_serialize(&set, deflate, &buf2, &len2, &msg), PV_OK);
        assert_int_equal(len, len2);
        assert_memory_equal(buf, buf2, len);
        pvc_free(buf2);
        pvc_free(buf);

        assert_int_equal(pvio_npz_write_file(path, &set, deflate, &msg), PV_OK);
        assert_int_equal(pvio_npz_read_file(path, &back, &msg), PV_OK);
        assert_int_equal(back.n, n);
        for (int i = 0; i < n; i++) assert_same_tensor(&arr[i].t, &back.a[i].t);
        pvio_arrays_free(&back);
    }
    assert_true(lens[1] < lens[0]);
    for (int i = 0; i < n; i++) {
        if (arr[i].t.data && i == n - 1) pvc_free(arr[i].t.data);
        else pvio_tensor_free_data(&arr[i].t);
    }
    unlink(path);
    pvio_arrays none;
    pvc_msg msg;
    assert_int_equal(pvio_npz_read_file(path, &none, &msg), PV_EINPUT);
    assert_null(none.a);
    free(path);
}

static void test_npz_empty_and_refusals(void **state)
{
    (void)state;
    pvc_msg msg;
    void *buf;
    size_t len;
    pvio_arrays empty = { NULL, 0 }, back;
    assert_int_equal(pvio_npz_serialize(&empty, true, &buf, &len, &msg), PV_OK);
    assert_int_equal(pvio_npz_parse(buf, len, &back, &msg), PV_OK);
    assert_int_equal(back.n, 0);
    pvio_arrays_free(&back);
    pvc_free(buf);

    float x[2] = { 1, 2 };
    uint16_t h[2] = { 0 };
    pvio_array arr[2] = {
        { (char *)"x", { .dtype = PV_F32, .rank = 1, .dims = { 2 }, .data = x } },
        { (char *)"x", { .dtype = PV_F32, .rank = 1, .dims = { 2 }, .data = x } },
    };
    pvio_arrays set = { arr, 2 };
    assert_int_equal(pvio_npz_serialize(&set, false, &buf, &len, &msg), PV_EINPUT);
    expect_msg(&msg, "'x' is used twice");
    arr[1].name = (char *)"";
    assert_int_equal(pvio_npz_serialize(&set, false, &buf, &len, &msg), PV_EINPUT);
    expect_msg(&msg, "no name");
    arr[1].name = (char *)"h";
    arr[1].t = (pvc_tensor){ .dtype = PV_BF16, .rank = 1, .dims = { 2 }, .data = h };
    assert_int_equal(pvio_npz_serialize(&set, false, &buf, &len, &msg), PV_EUNSUPPORTED);
    expect_msg(&msg, "npz entry 'h': npy: bfloat16");
    assert_null(buf);
    set.n = -1;
    assert_int_equal(pvio_npz_serialize(&set, false, &buf, &len, &msg), PV_EINPUT);
    assert_int_equal(pvio_npz_write_file("/nonexistent-dir/x.npz", &empty, false, &msg), PV_EINPUT);
}

/* A minimal zip writer for hand-made hostile archives (no zip64, no data descriptors). */
typedef struct zb { unsigned char p[8192]; size_t n; unsigned char cd[2048]; size_t ncd; int count; } zb;

static void put(unsigned char *b, size_t *n, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++) b[(*n)++] = (unsigned char)(v >> (8 * i));
}

static uint32_t crc32_of(const void *data, size_t n)
{
    uint32_t c = 0xffffffffu;
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
    }
    return ~c;
}

static void zb_add(zb *z, const char *name, int method, const void *data, size_t clen,
                   uint32_t usize, uint32_t crc)
{
    size_t nl = strlen(name), off = z->n;
    put(z->p, &z->n, 0x04034b50, 4); put(z->p, &z->n, 20, 2); put(z->p, &z->n, 0, 2);
    put(z->p, &z->n, (uint64_t)method, 2); put(z->p, &z->n, 0, 2); put(z->p, &z->n, 0x21, 2);
    put(z->p, &z->n, crc, 4); put(z->p, &z->n, clen, 4); put(z->p, &z->n, usize, 4);
    put(z->p, &z->n, nl, 2); put(z->p, &z->n, 0, 2);
    memcpy(z->p + z->n, name, nl); z->n += nl;
    memcpy(z->p + z->n, data, clen); z->n += clen;
    put(z->cd, &z->ncd, 0x02014b50, 4); put(z->cd, &z->ncd, 20, 2); put(z->cd, &z->ncd, 20, 2);
    put(z->cd, &z->ncd, 0, 2); put(z->cd, &z->ncd, (uint64_t)method, 2);
    put(z->cd, &z->ncd, 0, 2); put(z->cd, &z->ncd, 0x21, 2); put(z->cd, &z->ncd, crc, 4);
    put(z->cd, &z->ncd, clen, 4); put(z->cd, &z->ncd, usize, 4); put(z->cd, &z->ncd, nl, 2);
    put(z->cd, &z->ncd, 0, 2); put(z->cd, &z->ncd, 0, 2); put(z->cd, &z->ncd, 0, 2);
    put(z->cd, &z->ncd, 0, 2); put(z->cd, &z->ncd, 0, 4); put(z->cd, &z->ncd, off, 4);
    memcpy(z->cd + z->ncd, name, nl); z->ncd += nl;
    z->count++;
}

static size_t zb_finish(zb *z)
{
    size_t cd_off = z->n;
    memcpy(z->p + z->n, z->cd, z->ncd);
    z->n += z->ncd;
    put(z->p, &z->n, 0x06054b50, 4); put(z->p, &z->n, 0, 2); put(z->p, &z->n, 0, 2);
    put(z->p, &z->n, (uint64_t)z->count, 2); put(z->p, &z->n, (uint64_t)z->count, 2);
    put(z->p, &z->n, z->ncd, 4); put(z->p, &z->n, cd_off, 4); put(z->p, &z->n, 0, 2);
    return z->n;
}

static pv_status parse_zb(zb *z, pvc_msg *msg)
{
    size_t n = zb_finish(z);
    unsigned char *cp = malloc(n);
    memcpy(cp, z->p, n);
    pvio_arrays a;
    pv_status s = pvio_npz_parse(cp, n, &a, msg);
    free(cp);
    if (s == PV_OK) pvio_arrays_free(&a);
    else assert_null(a.a);
    return s;
}

static void test_npz_hostile(void **state)
{
    (void)state;
    pvc_msg msg;
    pvio_arrays a;
    assert_int_equal(pvio_npz_parse(FX(npz_dup), &a, &msg), PV_EFORMAT);
    expect_msg(&msg, "two entries share a name");
    assert_int_equal(pvio_npz_parse(FX(npz_notnpy), &a, &msg), PV_EFORMAT);
    expect_msg(&msg, "'readme.txt' is not a .npy file");
    assert_int_equal(pvio_npz_parse(FX(npz_bzip2), &a, &msg), PV_EUNSUPPORTED);
    expect_msg(&msg, "compression method 12");
    assert_int_equal(pvio_npz_parse(FX(npz_badnpy), &a, &msg), PV_EFORMAT);
    expect_msg(&msg, "npz entry 'x': ");
    assert_int_equal(pvio_npz_parse("", 0, &a, &msg), PV_EFORMAT);
    assert_int_equal(pvio_npz_parse(FX(np_f4_2x3), &a, &msg), PV_EFORMAT);
    expect_msg(&msg, "not a readable zip");
    assert_int_equal(pvio_npz_parse(NULL, 3, &a, &msg), PV_EINPUT);

    /* hand-built archives: valid, then CRC and size lies */
    const char *npy = fx_np_u1;
    size_t nl = sizeof fx_np_u1 - 1;
    uint32_t crc = crc32_of(npy, nl);
    zb *z = calloc(1, sizeof *z);
    zb_add(z, "u.npy", 0, npy, nl, (uint32_t)nl, crc);
    assert_int_equal(parse_zb(z, &msg), PV_OK);
    memset(z, 0, sizeof *z);
    zb_add(z, "u.npy", 0, npy, nl, (uint32_t)nl, crc ^ 1);
    assert_int_equal(parse_zb(z, &msg), PV_EFORMAT);
    expect_msg(&msg, "npz entry 'u'");
    memset(z, 0, sizeof *z);
    zb_add(z, "u.npy", 0, npy, nl, (uint32_t)nl - 1, crc);
    assert_int_not_equal(parse_zb(z, &msg), PV_OK);
    memset(z, 0, sizeof *z);
    zb_add(z, "u.npy", 0, npy, nl, (uint32_t)nl + 1, crc);
    assert_int_not_equal(parse_zb(z, &msg), PV_OK);
    /* deflate entry whose data is garbage */
    memset(z, 0, sizeof *z);
    zb_add(z, "u.npy", 8, "\xff\xff\xff\xff\xff\xff", 6, (uint32_t)nl, crc);
    assert_int_equal(parse_zb(z, &msg), PV_EFORMAT);
    /* a zip bomb: three deflated entries claiming 3 GiB each; refused before any inflation */
    memset(z, 0, sizeof *z);
    zb_add(z, "a.npy", 8, "\x03\x00", 2, 3u << 30, 0);
    zb_add(z, "b.npy", 8, "\x03\x00", 2, 3u << 30, 0);
    zb_add(z, "c.npy", 8, "\x03\x00", 2, 3u << 30, 0);
    assert_int_equal(parse_zb(z, &msg), PV_EUNSUPPORTED);
    expect_msg(&msg, "limit");
    /* one entry that claims 3 GiB but holds a tiny npy: the sizes disagree */
    memset(z, 0, sizeof *z);
    zb_add(z, "a.npy", 8, "\x03\x00", 2, 3u << 30, 0);
    assert_int_equal(parse_zb(z, &msg), PV_EFORMAT);
    /* a directory entry */
    memset(z, 0, sizeof *z);
    zb_add(z, "dir/", 0, "", 0, 0, 0);
    assert_int_equal(parse_zb(z, &msg), PV_EFORMAT);
    free(z);

    /* truncations at every byte and byte corruptions of the NumPy archives */
    const char *const arcs[3] = { fx_npz_stored, fx_npz_deflated, fx_npz_streamed };
    const size_t lens[3] = { sizeof fx_npz_stored - 1, sizeof fx_npz_deflated - 1,
                             sizeof fx_npz_streamed - 1 };
    for (int k = 0; k < 3; k++) {
        for (size_t cut = 0; cut < lens[k]; cut++) {
            unsigned char *cp = malloc(cut ? cut : 1);
            memcpy(cp, arcs[k], cut);
            pv_status s = pvio_npz_parse(cp, cut, &a, &msg);
            if (s == PV_OK) fail_msg("archive %d cut at %zu parsed", k, cut);
            free(cp);
        }
        unsigned char *cp = malloc(lens[k]);
        for (size_t i = 0; i < lens[k]; i++) {
            memcpy(cp, arcs[k], lens[k]);
            cp[i] ^= 0xa5;
            if (pvio_npz_parse(cp, lens[k], &a, &msg) == PV_OK) pvio_arrays_free(&a);
            else assert_null(a.a);
        }
        free(cp);
    }
}

/* ---- allocation failures ------------------------------------------------------------------ */
typedef pv_status (*oom_fn)(void);

static pv_status oom_npz_parse(void)
{
    pvio_arrays a;
    pvc_msg msg;
    pv_status s = pvio_npz_parse(FX(npz_deflated), &a, &msg);
    if (s == PV_OK) { check_numpy_npz(&a); pvio_arrays_free(&a); }
    return s;
}

static pv_status oom_npy_parse(void)
{
    pvc_tensor t;
    pvc_msg msg;
    pv_status s = pvio_npy_parse(FX(np_fortran_i4), &t, &msg);
    if (s == PV_OK) pvio_tensor_free_data(&t);
    return s;
}

static pv_status oom_npz_serialize(void)
{
    float x[6] = { 1, 2, 3, 4, 5, 6 };
    pvio_array arr[3] = {
        { (char *)"x", { .dtype = PV_F32, .rank = 2, .dims = { 2, 3 }, .data = x } },
        { (char *)"y", { .dtype = PV_F32, .rank = 1, .dims = { 6 }, .data = x } },
        { (char *)"z", { .dtype = PV_I32, .rank = 0, .data = x } },
    };
    pvio_arrays set = { arr, 3 };
    void *buf;
    size_t len;
    pvc_msg msg;
    pv_status s = pvio_npz_serialize(&set, true, &buf, &len, &msg);
    if (s == PV_OK) pvc_free(buf);
    return s;
}

static void run_oom(oom_fn fn, const char *what)
{
    for (long k = 1;; k++) {
        pvc_alloc_test_begin(k);
        pv_status s = fn();
        bool failed = pvc_alloc_failed();
        long live = pvc_alloc_live();
        pvc_alloc_test_end();
        if (live != 0) fail_msg("%s: %ld blocks leaked with failure at allocation %ld", what, live, k);
        if (!failed) {
            assert_int_equal(s, PV_OK);
            assert_true(k > 1);
            break;
        }
        if (s != PV_ENOMEM) fail_msg("%s: failure at allocation %ld gave status %d", what, k, (int)s);
        assert_true(k < 1000);
    }
}

static void test_oom(void **state)
{
    (void)state;
    run_oom(oom_npz_parse, "npz parse");
    run_oom(oom_npy_parse, "npy parse");
    run_oom(oom_npz_serialize, "npz serialize");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_npy_roundtrip_all),
        cmocka_unit_test(test_npy_roundtrip_file),
        cmocka_unit_test(test_npy_empty_and_strided),
        cmocka_unit_test(test_npy_write_refusals),
        cmocka_unit_test(test_npy_numpy_dtypes),
        cmocka_unit_test(test_npy_numpy_versions),
        cmocka_unit_test(test_npy_numpy_byteorder_fortran),
        cmocka_unit_test(test_npy_numpy_refused),
        cmocka_unit_test(test_npy_truncations_and_flips),
        cmocka_unit_test(test_npy_malformed_headers),
        cmocka_unit_test(test_npy_bool_normalized),
        cmocka_unit_test(test_npz_numpy),
        cmocka_unit_test(test_npz_roundtrip),
        cmocka_unit_test(test_npz_empty_and_refusals),
        cmocka_unit_test(test_npz_hostile),
        cmocka_unit_test(test_oom),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
