"""Bitmap commands: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD and BITFIELD_RO,
on strings of every encoding, with Redis 7.0's replies, errors and edge cases."""

import pytest

from support import OK, Err, Status, encode_command, info

ARITY = "ERR wrong number of arguments for '{}' command"
NOT_INTEGER = Err("ERR value is not an integer or out of range")
SYNTAX = Err("ERR syntax error")
WRONGTYPE = Err("WRONGTYPE Operation against a key holding the wrong kind of value")
BIT_OFFSET = Err("ERR bit offset is not an integer or out of range")
BIT_VALUE = Err("ERR bit is not an integer or out of range")
BAD_TYPE = Err("ERR Invalid bitfield type. Use something like i16 u8. "
               "Note that u64 is not supported but i64 is.")
BAD_OVERFLOW = Err("ERR Invalid OVERFLOW type specified")
RO_ONLY_GET = Err("ERR BITFIELD_RO only supports the GET subcommand")
OOM = Err("OOM command not allowed when used memory > 'maxmemory'.")
INT64_MAX = 9223372036854775807
INT64_MIN = -9223372036854775808
MAX_BIT = 2**32 - 1  # the last bit of a string of proto-max-bulk-len (512 MB)


# -- SETBIT / GETBIT -------------------------------------------------------------------


def test_setbit_creates_grows_and_returns_the_old_bit(c):
    assert c.call("SETBIT", "k", 7, 1) == 0
    assert c.call("GET", "k") == b"\x01"
    assert c.call("SETBIT", "k", 7, 1) == 1
    assert c.call("SETBIT", "k", 7, 0) == 1
    assert c.call("SETBIT", "k", 17, 1) == 0
    assert c.call("GET", "k") == b"\x00\x00\x40"
    assert c.call("SETBIT", "k", 2, 0) == 0, "clearing a clear bit"
    assert c.call("STRLEN", "k") == 3
    assert c.call("OBJECT", "ENCODING", "k") == b"raw"


def test_setbit_of_a_zero_past_the_end_still_grows(c):
    assert c.call("SETBIT", "k", 100, 0) == 0
    assert c.call("GET", "k") == b"\x00" * 13


def test_getbit(c):
    c.call("SET", "k", "`")  # 0b01100000
    assert [c.call("GETBIT", "k", i) for i in range(8)] == [0, 1, 1, 0, 0, 0, 0, 0]
    assert c.call("GETBIT", "k", 8) == 0
    assert c.call("GETBIT", "k", MAX_BIT) == 0
    assert c.call("GETBIT", "missing", 0) == 0
    assert c.call("EXISTS", "missing") == 0


def test_bits_of_integer_encoded_strings_are_their_digits(c):
    c.call("SET", "n", "12345")  # '1' is 0b00110001
    assert c.call("OBJECT", "ENCODING", "n") == b"int"
    assert [c.call("GETBIT", "n", i) for i in range(8)] == [0, 0, 1, 1, 0, 0, 0, 1]
    assert c.call("BITCOUNT", "n") == 17
    assert c.call("BITPOS", "n", 1) == 2
    assert c.call("SETBIT", "n", 1, 1) == 0
    assert c.call("GET", "n") == b"q2345"
    assert c.call("OBJECT", "ENCODING", "n") == b"raw"


def test_bitmaps_are_strings(c):
    c.call("SETBIT", "k", 0, 1)
    assert c.call("TYPE", "k") == Status("string")
    assert c.call("APPEND", "k", "A") == 2
    assert c.call("GETBIT", "k", 9) == 1
    assert c.call("SETRANGE", "k", 3, b"\xff") == 4
    assert c.call("BITCOUNT", "k") == 1 + 2 + 8
    c.call("SET", "k", "\x00")
    assert c.call("BITCOUNT", "k") == 0
    assert c.call("INCR", "k") == NOT_INTEGER
    c.call("SET", "k", "0")
    assert c.call("SETBIT", "k", 7, 1) == 0
    assert c.call("INCR", "k") == 2, "'0' with its last bit set is '1'"


@pytest.mark.parametrize("offset", [
    "-1", str(MAX_BIT + 1), str(2**63), "abc", "1.5", "", "01", "+1", "#1", " 1",
])
def test_bad_bit_offsets(c, offset):
    assert c.call("SETBIT", "k", offset, 1) == BIT_OFFSET
    assert c.call("GETBIT", "k", offset) == BIT_OFFSET
    assert c.call("EXISTS", "k") == 0


@pytest.mark.parametrize("value", ["2", "-1", "x", "", "01", "1.0", str(2**64)])
def test_setbit_bad_values(c, value):
    assert c.call("SETBIT", "k", 0, value) == BIT_VALUE
    assert c.call("EXISTS", "k") == 0


def test_setbit_checks_the_offset_then_the_value_then_the_type(c):
    c.call("LPUSH", "l", "a")
    assert c.call("SETBIT", "l", -1, 5) == BIT_OFFSET
    assert c.call("SETBIT", "l", 0, 5) == BIT_VALUE
    assert c.call("SETBIT", "l", 0, 1) == WRONGTYPE
    assert c.call("GETBIT", "l", -1) == BIT_OFFSET
    assert c.call("GETBIT", "l", 0) == WRONGTYPE


def test_offsets_follow_proto_max_bulk_len(c, restore_config):
    restore_config("proto-max-bulk-len")
    assert c.call("CONFIG", "SET", "proto-max-bulk-len", "1mb") == OK
    assert c.call("SETBIT", "k", 8 * 1024 * 1024, 1) == BIT_OFFSET
    assert c.call("GETBIT", "k", 8 * 1024 * 1024) == BIT_OFFSET
    assert c.call("SETBIT", "k", 8 * 1024 * 1024 - 1, 1) == 0
    assert c.call("STRLEN", "k") == 1024 * 1024


def test_setbit_keeps_the_ttl(c):
    c.call("SET", "k", "a", "EX", "100")
    c.call("SETBIT", "k", 100, 1)
    assert 0 < c.call("TTL", "k") <= 100


def test_setbit_that_changes_nothing_leaves_watchers_alone(c, connect):
    other = connect()
    c.call("SETBIT", "k", 3, 1)
    assert c.call("WATCH", "k") == OK
    assert other.call("SETBIT", "k", 3, 1) == 1
    assert other.call("SETBIT", "k", 5, 0) == 0
    c.call("MULTI")
    c.call("GETBIT", "k", 3)
    assert c.call("EXEC") == [1]
    assert c.call("WATCH", "k") == OK
    other.call("SETBIT", "k", 3, 0)
    c.call("MULTI")
    c.call("GETBIT", "k", 3)
    assert c.call("EXEC") is None


# -- BITCOUNT ------------------------------------------------------------------------


@pytest.mark.parametrize("args,expected", [
    ((), 26),
    ((0, 0), 4),
    ((1, 1), 6),
    ((1, -2), 18),
    ((-1, -1), 4),
    ((-100, 100), 26),
    ((4, 2), 0),
    ((-1, -3), 0),
    ((-100, -200), 0),  # both negative and crossed: empty, though clamping would meet at 0
    ((10, 20), 0),
    ((5, 30, "BIT"), 17),
    ((5, 30, "bit"), 17),
    ((1, 1, "BIT"), 1),
    ((0, 0, "BIT"), 0),
    ((-3, -1, "BIT"), 1),
    ((40, 100, "BIT"), 4),
    ((0, -1, "BYTE"), 26),
])
def test_bitcount(c, args, expected):
    c.call("SET", "k", "foobar")
    assert c.call("BITCOUNT", "k", *args) == expected


def test_bitcount_of_empty_and_long_strings(c):
    c.call("SET", "e", "")
    assert c.call("BITCOUNT", "e") == 0
    assert c.call("BITCOUNT", "e", 0, -1, "BIT") == 0
    c.call("SET", "long", b"\xff" * 1000 + b"\x01" * 1000)
    assert c.call("BITCOUNT", "long") == 9000
    assert c.call("BITCOUNT", "long", 3, 1500) == 997 * 8 + 501
    assert c.call("BITCOUNT", "long", 7995, 8007, "BIT") == 5 + 1


def test_bitcount_errors(c):
    c.call("SET", "k", "foobar")
    assert c.call("BITCOUNT", "k", 0) == SYNTAX
    assert c.call("BITCOUNT", "k", 0, 1, "BIT", "x") == SYNTAX
    assert c.call("BITCOUNT", "k", 0, 1, "BITS") == SYNTAX
    assert c.call("BITCOUNT", "k", -1, -2, "BITS") == 0, "crossed negatives: 0 before the unit"
    assert c.call("BITCOUNT", "k", "a", 1) == NOT_INTEGER
    assert c.call("BITCOUNT", "k", 0, "b", "nosuch") == NOT_INTEGER
    assert c.call("BITCOUNT") == Err(ARITY.format("bitcount"))
    c.call("LPUSH", "l", "a")
    assert c.call("BITCOUNT", "l", "x") == WRONGTYPE


def test_bitcount_of_a_missing_key_is_0_whatever_the_arguments(c):
    # Redis 7.0 looks the key up before it reads the range.
    assert c.call("BITCOUNT", "missing") == 0
    assert c.call("BITCOUNT", "missing", 0) == 0
    assert c.call("BITCOUNT", "missing", "a", "b", "c") == 0


# -- BITPOS --------------------------------------------------------------------------


@pytest.mark.parametrize("args,expected", [
    ((1,), 12),
    ((0,), 0),
    ((1, 2), 16),
    ((1, -1), 24),
    ((0, 1), 8),
    ((1, 12, 100, "BIT"), 12),
    ((1, 13, 100, "BIT"), 13),
    ((0, 12, 13, "BIT"), -1),
    ((0, 11, 14, "bit"), 11),
    ((0, 12, 14, "bit"), -1),
    ((0, 12, 25, "BIT"), 25),
    ((1, 0, 11, "BIT"), -1),
    ((1, 3, 10), 24),
    ((1, 4, 10), -1),
    ((1, 2, 1), -1),
    ((1, -100, -200), -1),  # no crossed-negatives rule here: clamped to byte 0
    ((0, -100, -200), 0),
    ((0, 0, 0, "BYTE"), 0),
])
def test_bitpos(c, args, expected):
    c.call("SET", "k", b"\x00\x0f\xff\x80")
    assert c.call("BITPOS", "k", *args) == expected


def test_bitpos_clear_bit_past_the_end(c):
    c.call("SET", "k", b"\xff\xff\xff")
    assert c.call("BITPOS", "k", 0) == 24, "no range: as if padded with zeros"
    assert c.call("BITPOS", "k", 0, 1) == 24, "start only: still padded"
    assert c.call("BITPOS", "k", 0, 0, -1) == -1, "an explicit end: not found"
    assert c.call("BITPOS", "k", 0, 0, -1, "BIT") == -1
    assert c.call("BITPOS", "k", 0, 5) == -1, "empty range"
    assert c.call("BITPOS", "k", 1, 0, -1) == 0


def test_bitpos_missing_and_empty(c):
    assert c.call("BITPOS", "missing", 0) == 0
    assert c.call("BITPOS", "missing", 1) == -1
    assert c.call("BITPOS", "missing", 0, "junk") == 0, "range not read for a missing key"
    c.call("SET", "e", "")
    assert c.call("BITPOS", "e", 0) == -1
    assert c.call("BITPOS", "e", 1) == -1
    assert c.call("BITPOS", "e", 0, 0) == -1


def test_bitpos_on_long_strings(c):
    c.call("SET", "k", b"\x00" * 999 + b"\x01" + b"\xff" * 50)
    assert c.call("BITPOS", "k", 1) == 999 * 8 + 7
    assert c.call("BITPOS", "k", 1, 3, -1) == 999 * 8 + 7
    assert c.call("BITPOS", "k", 0, 1000) == 1050 * 8
    assert c.call("BITPOS", "k", 0, 999 * 8 + 3, -1, "BIT") == 999 * 8 + 3
    assert c.call("BITPOS", "k", 0, 999 * 8 + 7, -1, "BIT") == -1


def test_bitpos_errors(c):
    c.call("SET", "k", "a")
    assert c.call("BITPOS", "k", 2) == Err("ERR The bit argument must be 1 or 0.")
    assert c.call("BITPOS", "k", -1) == Err("ERR The bit argument must be 1 or 0.")
    assert c.call("BITPOS", "k", "x") == NOT_INTEGER
    assert c.call("BITPOS", "missing", 2) == Err("ERR The bit argument must be 1 or 0.")
    assert c.call("BITPOS", "k", 1, "x") == NOT_INTEGER
    assert c.call("BITPOS", "k", 1, 0, "x") == NOT_INTEGER
    assert c.call("BITPOS", "k", 1, 0, "x", "nosuch") == SYNTAX, "the unit is read before the end"
    assert c.call("BITPOS", "k", 1, 0, 1, "BIT", "x") == SYNTAX
    assert c.call("BITPOS", "k") == Err(ARITY.format("bitpos"))
    c.call("LPUSH", "l", "a")
    assert c.call("BITPOS", "l", 1) == WRONGTYPE
    assert c.call("BITPOS", "l", 3) == Err("ERR The bit argument must be 1 or 0.")


# -- BITOP ---------------------------------------------------------------------------


def test_bitop_operations(c):
    c.call("SET", "a", b"\xff\x0f\x01")
    c.call("SET", "b", b"\x0f\xf0")
    assert c.call("BITOP", "AND", "d", "a", "b") == 3
    assert c.call("GET", "d") == b"\x0f\x00\x00"
    assert c.call("BITOP", "or", "d", "a", "b") == 3
    assert c.call("GET", "d") == b"\xff\xff\x01"
    assert c.call("BITOP", "Xor", "d", "a", "b", "b") == 3
    assert c.call("GET", "d") == b"\xff\x0f\x01"
    assert c.call("BITOP", "NOT", "d", "b") == 2
    assert c.call("GET", "d") == b"\xf0\x0f"
    assert c.call("OBJECT", "ENCODING", "d") == b"raw"


def test_bitop_missing_keys_are_zeros_and_integers_their_digits(c):
    c.call("SET", "n", "12")
    c.call("SET", "s", "ab")
    assert c.call("BITOP", "OR", "d", "n", "missing") == 2
    assert c.call("GET", "d") == b"12"
    assert c.call("BITOP", "AND", "d", "s", "missing") == 2
    assert c.call("GET", "d") == b"\x00\x00"
    assert c.call("BITOP", "XOR", "d", "s", "n") == 2
    assert c.call("GET", "d") == bytes([ord("a") ^ ord("1"), ord("b") ^ ord("2")])


def test_bitop_empty_result_deletes_the_destination(c):
    c.call("SET", "d", "old", "EX", "100")
    c.call("SET", "e", "")
    assert c.call("BITOP", "AND", "d", "missing", "e") == 0
    assert c.call("EXISTS", "d") == 0
    c.call("LPUSH", "list", "x")
    assert c.call("BITOP", "NOT", "list", "missing") == 0
    assert c.call("EXISTS", "list") == 0, "whatever its type"


def test_bitop_replaces_the_destination_and_its_ttl(c):
    c.call("SET", "d", "old", "EX", "100")
    c.call("HSET", "h", "f", "v")
    c.call("SET", "a", "x")
    assert c.call("BITOP", "OR", "d", "a") == 1
    assert c.call("TTL", "d") == -1
    assert c.call("BITOP", "OR", "h", "a") == 1
    assert c.call("TYPE", "h") == Status("string")
    assert c.call("BITOP", "NOT", "a", "a") == 1
    assert c.call("GET", "a") == bytes([0xff ^ ord("x")])


def test_bitop_errors(c):
    c.call("SET", "a", "x")
    c.call("LPUSH", "l", "y")
    assert c.call("BITOP", "NAND", "d", "a") == SYNTAX
    assert c.call("BITOP", "NOT", "d", "a", "a") == Err(
        "ERR BITOP NOT must be called with a single source key.")
    assert c.call("BITOP", "AND", "d", "a", "l") == WRONGTYPE
    assert c.call("BITOP", "AND", "d") == Err(ARITY.format("bitop"))
    assert c.call("EXISTS", "d") == 0


# -- BITFIELD ------------------------------------------------------------------------


def test_bitfield_set_get_incrby(c):
    assert c.call("BITFIELD", "k", "SET", "i8", 0, -100, "GET", "i8", 0, "GET", "u8", 0) == [
        0, -100, 156]
    assert c.call("BITFIELD", "k", "INCRBY", "u4", 2, 3, "GET", "u4", 2) == [10, 10]
    assert c.call("BITFIELD", "k", "set", "u63", 8, INT64_MAX, "get", "i64", 8) == [0, -2]
    assert c.call("BITFIELD", "k", "SET", "i64", 0, INT64_MIN, "GET", "i64", 0) == [
        -6269010681299730433, INT64_MIN]
    assert c.call("STRLEN", "k") == 9


def test_bitfield_hash_offsets_count_fields(c):
    assert c.call("BITFIELD", "k", "SET", "u8", "#1", 255, "SET", "u4", "#1", 3) == [0, 0]
    assert c.call("GET", "k") == b"\x03\xff"
    assert c.call("BITFIELD", "k", "GET", "u8", "#0", "GET", "u8", "#1", "GET", "u4", "#3") == [
        3, 255, 15]


def test_bitfield_reads_past_the_end_as_zeros_without_growing(c):
    c.call("SET", "k", b"\xff")
    assert c.call("BITFIELD", "k", "GET", "u16", 0, "GET", "i64", 4, "GET", "u8", MAX_BIT) == [
        0xff00, -(1 << 60), 0]
    assert c.call("STRLEN", "k") == 1
    assert c.call("BITFIELD", "missing", "GET", "i8", 0) == [0]
    assert c.call("EXISTS", "missing") == 0


def test_bitfield_grows_to_the_farthest_write(c, restore_config):
    assert c.call("BITFIELD", "k", "SET", "u8", 100, 1, "GET", "u8", 0) == [0, 0]
    assert c.call("STRLEN", "k") == 14
    restore_config("proto-max-bulk-len")
    assert c.call("CONFIG", "SET", "proto-max-bulk-len", "1mb") == OK
    assert c.call("BITFIELD", "k", "GET", "u8", 8 * 1024 * 1024) == BIT_OFFSET
    # Only the offset is checked: a field starting at the last bit allowed ends past it.
    assert c.call("BITFIELD", "k", "SET", "u8", 8 * 1024 * 1024 - 1, 255) == [0]
    assert c.call("STRLEN", "k") == 1024 * 1024 + 1


@pytest.mark.parametrize("overflow,field,value,expected", [
    ("WRAP", "u8", 300, [0, 44]),
    ("SAT", "u8", 300, [0, 255]),
    ("FAIL", "u8", 300, [None, 0]),
    ("SAT", "u8", -1, [0, 255]),  # -1 reads as the largest u64: an overflow upwards
    ("WRAP", "u8", -1, [0, 255]),
    ("WRAP", "i8", 200, [0, -56]),
    ("SAT", "i8", 200, [0, 127]),
    ("SAT", "i8", -200, [0, -128]),
    ("FAIL", "i8", -129, [None, 0]),
    ("SAT", "i8", INT64_MIN, [0, 127]),  # Redis's check wraps here, so it saturates upwards
    ("SAT", "i8", INT64_MIN + 128, [0, -128]),
    ("SAT", "i1", 1, [0, 0]),
    ("SAT", "u1", 2, [0, 1]),
])
def test_bitfield_set_overflow(c, overflow, field, value, expected):
    assert c.call("BITFIELD", "k", "OVERFLOW", overflow, "SET", field, 0, value,
                  "GET", field, 0) == expected


@pytest.mark.parametrize("overflow,field,start,incr,expected", [
    ("WRAP", "u8", 250, 10, 4),
    ("SAT", "u8", 250, 10, 255),
    ("FAIL", "u8", 250, 10, None),
    ("WRAP", "u8", 5, -10, 251),
    ("SAT", "u8", 5, -10, 0),
    ("WRAP", "i8", 100, 100, -56),
    ("SAT", "i8", -100, -100, -128),
    ("FAIL", "i8", -100, -100, None),
    ("WRAP", "i64", INT64_MAX, 1, INT64_MIN),
    ("SAT", "i64", INT64_MAX, 1, INT64_MAX),
    ("SAT", "i64", INT64_MIN, -1, INT64_MIN),
    ("SAT", "i64", -5, INT64_MAX, INT64_MAX - 5),
    ("WRAP", "u63", INT64_MAX, 1, 0),
    ("SAT", "u63", 1, INT64_MIN, 0),
    ("WRAP", "u2", 3, INT64_MIN, 3),
])
def test_bitfield_incrby_overflow(c, overflow, field, start, incr, expected):
    c.call("BITFIELD", "k", "SET", field, 0, start)
    assert c.call("BITFIELD", "k", "OVERFLOW", overflow, "INCRBY", field, 0, incr) == [expected]
    stored = expected if expected is not None else start
    assert c.call("BITFIELD", "k", "GET", field, 0) == [stored]


def test_bitfield_overflow_mode_applies_to_what_follows(c):
    assert c.call("BITFIELD", "k", "INCRBY", "u2", 0, 5, "OVERFLOW", "SAT", "INCRBY", "u2", 2, 5,
                  "OVERFLOW", "FAIL", "INCRBY", "u2", 4, 5, "OVERFLOW", "wrap",
                  "INCRBY", "u2", 6, 5) == [1, 3, None, 1]


def test_bitfield_fail_still_creates_the_key(c):
    assert c.call("BITFIELD", "k", "OVERFLOW", "FAIL", "INCRBY", "u2", 8, 10) == [None]
    assert c.call("GET", "k") == b"\x00\x00"


def test_bitfield_without_operations(c):
    assert c.call("BITFIELD", "k") == []
    assert c.call("BITFIELD", "k", "OVERFLOW", "SAT") == []
    assert c.call("BITFIELD_RO", "k") == []
    assert c.call("EXISTS", "k") == 0
    c.call("LPUSH", "l", "a")
    assert c.call("BITFIELD", "l") == WRONGTYPE


@pytest.mark.parametrize("field", ["i65", "u64", "i0", "u0", "U8", "I8", "i", "8", "", "i08",
                                   "i+8", "i-8", "x8", "u8x", "i 8"])
def test_bitfield_bad_types(c, field):
    assert c.call("BITFIELD", "k", "GET", field, 0) == BAD_TYPE
    assert c.call("BITFIELD", "k", "SET", field, 0, 1) == BAD_TYPE


def test_bitfield_type_is_read_up_to_a_nul_byte(c):
    assert c.call("BITFIELD", "k", "GET", b"u8\x00junk", 0) == [0]


@pytest.mark.parametrize("offset", [
    "-1", str(MAX_BIT + 1), "#-1", "#536870912", "##1", "#x", "#", "x", "1.0",
    "#1152921504606846976",  # 2^60 fields of 8 bits wrap to -2^63
])
def test_bitfield_bad_offsets(c, offset):
    assert c.call("BITFIELD", "k", "GET", "u8", offset) == BIT_OFFSET


def test_bitfield_hash_offset_product_wraps_as_in_redis(c):
    # 2^61 fields of 8 bits: the product wraps to offset 0.
    c.call("SET", "k", b"\x2a")
    assert c.call("BITFIELD", "k", "GET", "u8", "#2305843009213693952") == [42]


@pytest.mark.parametrize("args,error", [
    (("GET", "u8"), SYNTAX),
    (("SET", "u8", 0), SYNTAX),
    (("INCRBY", "u8", 0), SYNTAX),
    (("OVERFLOW",), SYNTAX),
    (("NOSUCH", "u8", 0),  SYNTAX),
    (("GET", "u8", 0, "extra"), SYNTAX),
    (("OVERFLOW", "nope", "GET", "u8", 0), BAD_OVERFLOW),
    (("SET", "u8", 0, "x"), NOT_INTEGER),
    (("INCRBY", "u8", 0, str(2**63)), NOT_INTEGER),
    (("SET", "u8", "x", 1), BIT_OFFSET),
    (("SET", "u99", "x", "y"), BAD_TYPE),
    (("SET", "u8", "x", "y"), BIT_OFFSET),
])
def test_bitfield_errors_change_nothing(c, args, error):
    c.call("SET", "k", "abc")
    assert c.call("BITFIELD", "k", "SET", "u8", 0, 1, *args) == error
    assert c.call("GET", "k") == b"abc"


def test_bitfield_on_other_types(c):
    c.call("LPUSH", "l", "a")
    assert c.call("BITFIELD", "l", "GET", "u8", 0) == WRONGTYPE
    assert c.call("BITFIELD", "l", "SET", "u8", 0, 1) == WRONGTYPE
    assert c.call("BITFIELD", "l", "GET", "u99", 0) == BAD_TYPE, "arguments are checked first"
    assert c.call("BITFIELD_RO", "l", "GET", "u8", 0) == WRONGTYPE


def test_bitfield_on_integer_encoded_strings(c):
    c.call("SET", "n", "255")
    assert c.call("BITFIELD", "n", "GET", "u8", 0, "GET", "u8", 16, "GET", "u8", 24) == [
        50, 53, 0]
    assert c.call("OBJECT", "ENCODING", "n") == b"int"
    assert c.call("BITFIELD", "n", "INCRBY", "u8", 16, 1) == [54]
    assert c.call("GET", "n") == b"256"


def test_bitfield_ro(c):
    c.call("SET", "k", b"\x80")
    assert c.call("BITFIELD_RO", "k", "GET", "i8", 0, "GET", "u1", 0) == [-128, 1]
    assert c.call("BITFIELD_RO", "k", "OVERFLOW", "SAT", "GET", "u4", "#1") == [0]
    assert c.call("BITFIELD_RO", "k", "SET", "u8", 0, 1) == RO_ONLY_GET
    assert c.call("BITFIELD_RO", "k", "INCRBY", "u8", 0, 1) == RO_ONLY_GET
    assert c.call("BITFIELD_RO", "k", "SET", "u8", 0, "x") == NOT_INTEGER, "parsed first"
    assert c.call("BITFIELD_RO", "k", "GET", "u8", 0, "SET", "u8", 0, 1) == RO_ONLY_GET
    assert c.call("GET", "k") == b"\x80"
    assert c.call("BITFIELD_RO") == Err(ARITY.format("bitfield_ro"))


def test_bitfield_fail_reply_is_null_in_resp3(c):
    assert c.call("HELLO", "3")
    c.send_raw(encode_command("BITFIELD", "k", "OVERFLOW", "FAIL", "INCRBY", "u2", 0, 9,
                              "INCRBY", "u2", 0, 1))
    assert c.read_raw() == b"*2\r\n_\r\n:1\r\n"


def test_bitfield_fail_reply_is_null_bulk_in_resp2(c):
    c.send_raw(encode_command("BITFIELD", "k", "OVERFLOW", "FAIL", "INCRBY", "u2", 0, 9))
    assert c.read_raw() == b"*1\r\n$-1\r\n"


def test_bitfield_through_redis_py(r):
    assert r.bitfield("k").set("u8", 0, 200).incrby("u8", 0, 100).execute() == [0, 44]
    assert r.bitfield_ro("k", "u8", 0) == [44]
    assert r.setbit("b", 3, 1) == 0
    assert r.bitcount("b") == 1
    assert r.bitpos("b", 1) == 3


# -- COMMAND -------------------------------------------------------------------------


@pytest.mark.parametrize("name,arity,flags,keys,categories", [
    ("setbit", 4, ["write", "denyoom"], [1, 1, 1], ["@write", "@bitmap", "@slow"]),
    ("getbit", 3, ["readonly", "fast"], [1, 1, 1], ["@read", "@bitmap", "@fast"]),
    ("bitcount", -2, ["readonly"], [1, 1, 1], ["@read", "@bitmap", "@slow"]),
    ("bitpos", -3, ["readonly"], [1, 1, 1], ["@read", "@bitmap", "@slow"]),
    ("bitop", -4, ["write", "denyoom"], [2, -1, 1], ["@write", "@bitmap", "@slow"]),
    ("bitfield", -2, ["write", "denyoom"], [1, 1, 1], ["@write", "@bitmap", "@slow"]),
    ("bitfield_ro", -2, ["readonly", "fast"], [1, 1, 1], ["@read", "@bitmap", "@fast"]),
])
def test_command_info(c, name, arity, flags, keys, categories):
    [entry] = c.call("COMMAND", "INFO", name)
    assert entry[:6] == [name.encode(), arity, [Status(f) for f in flags], *keys]
    assert entry[6] == [Status(cat) for cat in categories]


@pytest.mark.parametrize("name,summary,since,complexity", [
    ("setbit", "Sets or clears the bit at offset in the string value stored at key",
     "2.2.0", "O(1)"),
    ("getbit", "Returns the bit value at offset in the string value stored at key",
     "2.2.0", "O(1)"),
    ("bitcount", "Count set bits in a string", "2.6.0", "O(N)"),
    ("bitpos", "Find first bit set or clear in a string", "2.8.7", "O(N)"),
    ("bitop", "Perform bitwise operations between strings", "2.6.0", "O(N)"),
    ("bitfield", "Perform arbitrary bitfield integer operations on strings", "3.2.0",
     "O(1) for each subcommand specified"),
    ("bitfield_ro", "Perform arbitrary bitfield integer operations on strings. "
     "Read-only variant of BITFIELD", "6.0.0", "O(1) for each subcommand specified"),
])
def test_command_docs(c, name, summary, since, complexity):
    [_, fields] = c.call("COMMAND", "DOCS", name)
    doc = dict(zip(fields[::2], fields[1::2]))
    assert doc[b"summary"] == summary.encode()
    assert doc[b"since"] == since.encode()
    assert doc[b"group"] == b"bitmap"
    assert doc[b"complexity"] == complexity.encode()


def test_command_getkeys(c):
    assert c.call("COMMAND", "GETKEYS", "BITOP", "AND", "d", "a", "b") == [b"d", b"a", b"b"]
    assert c.call("COMMAND", "GETKEYS", "BITFIELD", "k", "GET", "u8", "0") == [b"k"]


def test_keyspace_hits_and_misses(c):
    c.call("CONFIG", "RESETSTAT")
    c.call("SET", "k", "a")
    c.call("GETBIT", "k", 0)
    c.call("BITCOUNT", "missing")
    c.call("BITPOS", "k", 1)
    c.call("BITOP", "AND", "d", "k", "missing")
    stats = info(c, "stats")
    assert (stats["keyspace_hits"], stats["keyspace_misses"]) == ("3", "2")


# -- Memory --------------------------------------------------------------------------

MAXMEMORY = 16 * 1024 * 1024
RESERVES = "Redis reserves nothing for a write's growth and lets the dataset pass maxmemory"


@pytest.mark.keel_differs(reason=RESERVES)
@pytest.mark.parametrize("setup,write,read", [
    ((), ("SETBIT", "k", 2**30, 1), ("EXISTS", "k")),
    (("SET", "k", "abc"), ("SETBIT", "k", 2**30, 1), ("GET", "k")),
    ((), ("BITFIELD", "k", "SET", "u8", "#200000000", 1), ("EXISTS", "k")),
    (("SETRANGE", "src", 12_000_000, "x"), ("BITOP", "NOT", "d", "src"), ("EXISTS", "d")),
], ids=["SETBIT new", "SETBIT grow", "BITFIELD", "BITOP"])
def test_a_bitmap_write_that_cannot_fit_gets_oom(start_server, setup, write, read):
    srv = start_server({"maxmemory": str(MAXMEMORY), "maxmemory-policy": "noeviction"})
    with srv.conn() as conn:
        if setup:
            conn.call(*setup)
        before = conn.call(*read)
        assert conn.call(*write) == OOM
        assert conn.call(*read) == before
        assert int(info(conn, "memory")["used_memory_dataset"]) <= MAXMEMORY


def test_arity_errors(c):
    for name, args in [("SETBIT", ("k", 1)), ("GETBIT", ("k",)), ("BITOP", ("AND", "d"))]:
        assert c.call(name, *args) == Err(ARITY.format(name.lower()))
