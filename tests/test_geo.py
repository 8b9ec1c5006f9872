"""GEO commands: GEOADD (NX/XX/CH), GEOPOS, GEOHASH, GEODIST, GEORADIUS,
GEORADIUSBYMEMBER and their _RO forms, GEOSEARCH, GEOSEARCHSTORE, the STORE
and STOREDIST options; points stored as sorted-set members scored by their
52-bit geohash; coordinate limits, units, errors and exact reply formats in
RESP2 and RESP3."""

import pytest

from support import Err, Status

WRONGTYPE = Err("WRONGTYPE Operation against a key holding the wrong kind of value")
SYNTAX = Err("ERR syntax error")
NOT_FLOAT = Err("ERR value is not a valid float")
NOT_INTEGER = Err("ERR value is not an integer or out of range")
BAD_UNIT = Err("ERR unsupported unit provided. please use M, KM, FT, MI")
NO_MEMBER = Err("ERR could not decode requested zset member")

NYC = [
    ("-73.9454966", "40.747533", "lic market"),
    ("-73.9733487", "40.7648057", "central park n/q/r"),
    ("-73.9903085", "40.7362513", "union square"),
    ("-74.0131604", "40.7126674", "wtc one"),
    ("-73.7858139", "40.6428986", "jfk"),
    ("-73.9375699", "40.7498929", "q4"),
    ("-73.9564142", "40.7480973", "4545"),
]


def add_nyc(c, key="nyc"):
    return c.call("GEOADD", key, *[a for point in NYC for a in point])


def add_sicily(c, key="Sicily"):
    return c.call(
        "GEOADD", key, "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"
    )


def test_geoadd_stores_geohash_scores(c):
    assert add_nyc(c) == 7
    assert c.call("TYPE", "nyc") == Status("zset")
    assert c.call("ZRANGE", "nyc", "0", "-1", "WITHSCORES") == [
        b"wtc one", b"1791873972053020",
        b"union square", b"1791875485187452",
        b"central park n/q/r", b"1791875761332224",
        b"4545", b"1791875796750882",
        b"lic market", b"1791875804419201",
        b"q4", b"1791875830079666",
        b"jfk", b"1791895905559723",
    ]
    assert c.call("OBJECT", "ENCODING", "nyc") == b"listpack"
    # The corners of the limits.
    assert c.call("GEOADD", "k", "180", "85.05112878", "ne", "-180", "-85.05112878", "sw") == 2
    assert c.call("ZMSCORE", "k", "ne", "sw") == [b"13510798882111488", b"0"]


def test_geoadd_flags(c):
    assert c.call("GEOADD", "k", "XX", "1", "1", "a") == 0
    assert c.call("EXISTS", "k") == 0
    assert c.call("GEOADD", "k", "1", "1", "a") == 1
    assert c.call("GEOADD", "k", "1", "1", "a") == 0
    assert c.call("GEOADD", "k", "CH", "2", "2", "a") == 1
    assert c.call("GEOADD", "k", "CH", "2", "2", "a") == 0
    assert c.call("GEOADD", "k", "NX", "3", "3", "a", "3", "3", "b") == 1
    assert c.call("GEOADD", "k", "CH", "NX", "4", "4", "a") == 0
    assert c.call("GEOADD", "k", "XX", "5", "5", "a", "5", "5", "c") == 0
    assert c.call("GEOADD", "k", "CH", "XX", "6", "6", "a", "6", "6", "c") == 1
    assert c.call("ZCARD", "k") == 2
    assert c.call("GEOPOS", "k", "a", "b") == [
        [b"6.00000232458114624", b"6.00000055693963219"],
        [b"2.99999982118606567", b"3.00000091215010656"],
    ]
    assert c.call("GEOADD", "k", "XX", "NX", "1", "1", "a") == SYNTAX
    assert c.call("GEOADD", "k", "CH", "XX", "foo", "1", "1", "a") == SYNTAX
    assert c.call("GEOADD", "k", "GT", "1", "1", "a") == SYNTAX
    assert c.call("GEOADD", "k", "CH", "CH", "CH") == SYNTAX
    assert c.call("GEOADD", "k", "1", "1", "a", "2") == SYNTAX
    assert c.call("GEOADD", "k", "1", "1") == Err(
        "ERR wrong number of arguments for 'geoadd' command"
    )


def test_geoadd_refuses_out_of_range_and_bad_numbers_atomically(c):
    assert c.call("GEOADD", "k", "1", "1", "a", "200", "100", "b") == Err(
        "ERR invalid longitude,latitude pair 200.000000,100.000000"
    )
    assert c.call("EXISTS", "k") == 0
    assert c.call("GEOADD", "k", "13", "-86", "a") == Err(
        "ERR invalid longitude,latitude pair 13.000000,-86.000000"
    )
    assert c.call("GEOADD", "k", "-180.5", "0", "a") == Err(
        "ERR invalid longitude,latitude pair -180.500000,0.000000"
    )
    assert c.call("GEOADD", "k", "0", "85.0511288", "a") == Err(
        "ERR invalid longitude,latitude pair 0.000000,85.051129"
    )
    assert c.call("GEOADD", "k", "inf", "0", "a") == Err(
        "ERR invalid longitude,latitude pair inf,0.000000"
    )
    assert c.call("GEOADD", "k", "1e300", "0", "a") == Err(
        "ERR invalid longitude,latitude pair " + "%f" % 1e300 + ",0.000000"
    )
    for bad in ("abc", "nan", "", " 1", "1x", "0x"):
        assert c.call("GEOADD", "k", "1", bad, "a") == NOT_FLOAT, bad
    assert c.call("EXISTS", "k") == 0
    # strtod's hexadecimal floats are numbers too.
    assert c.call("GEOADD", "k", "0x10", "-0x1p-1", "a") == 1
    assert c.call("GEOPOS", "k", "a") == [[b"16.00000172853469849", b"-0.50000036325177888"]]


def test_geopos_geohash(c):
    add_sicily(c)
    assert c.call("GEOPOS", "Sicily", "Palermo", "nope", "Catania") == [
        [b"13.36138933897018433", b"38.11555639549629859"],
        None,
        [b"15.08726745843887329", b"37.50266842333162032"],
    ]
    assert c.call("GEOPOS", "missing", "a", "b") == [None, None]
    assert c.call("GEOPOS", "Sicily") == []
    assert c.call("GEOHASH", "Sicily", "Palermo", "Catania", "nope") == [
        b"sqc8b49rny0",
        b"sqdtr74hyu0",
        None,
    ]
    assert c.call("GEOHASH", "missing", "a") == [None]
    c.call("GEOADD", "points", "-5.6", "42.6", "test")
    assert c.call("GEOHASH", "points", "test") == [b"ezs42e44yx0"]


def test_geopos_of_scores_that_are_not_geohashes(c):
    # Decoded as Redis's casts of the double to an integer leave them.
    c.call("ZADD", "k", "0", "zero", "-5", "neg", "1e30", "big", "-1e30", "nbig", "1.5", "frac")
    assert c.call("GEOPOS", "k", "zero", "neg", "big", "nbig", "frac") == [
        [b"-179.99999731779098511", b"-85.05112751263942528"],
        [b"180", b"85.0511287799999991"],
        [b"-179.99999731779098511", b"-85.05112751263942528"],
        [b"180", b"-85.05112751263942528"],
        [b"-179.99999731779098511", b"-85.05112497791824921"],
    ]
    assert c.call("GEOHASH", "k", "neg", "frac") == [b"bp05b5048p0", b"00bh0hbj210"]


def test_geodist_units(c):
    add_sicily(c)
    assert c.call("GEODIST", "Sicily", "Palermo", "Catania") == b"166274.1516"
    assert c.call("GEODIST", "Sicily", "Palermo", "Catania", "km") == b"166.2742"
    assert c.call("GEODIST", "Sicily", "Palermo", "Catania", "KM") == b"166.2742"
    assert c.call("GEODIST", "Sicily", "Palermo", "Catania", "mi") == b"103.3182"
    assert c.call("GEODIST", "Sicily", "Palermo", "Catania", "Ft") == b"545518.8700"
    assert c.call("GEODIST", "Sicily", "Palermo", "Palermo") == b"0.0000"
    assert c.call("GEODIST", "Sicily", "Palermo", "nope") is None
    assert c.call("GEODIST", "missing", "Palermo", "Catania") is None
    assert c.call("GEODIST", "Sicily", "Palermo", "Catania", "yd") == BAD_UNIT
    assert c.call("GEODIST", "missing", "a", "b", "yd") == BAD_UNIT
    assert c.call("GEODIST", "Sicily", "Palermo", "Catania", "km", "x") == SYNTAX


def test_wrong_type(c):
    c.call("SET", "str", "x")
    assert c.call("GEOADD", "str", "1", "1", "a") == WRONGTYPE
    # Coordinates are checked first.
    assert c.call("GEOADD", "str", "1", "1000", "a") == Err(
        "ERR invalid longitude,latitude pair 1.000000,1000.000000"
    )
    assert c.call("GEOPOS", "str", "a") == WRONGTYPE
    assert c.call("GEOHASH", "str", "a") == WRONGTYPE
    assert c.call("GEODIST", "str", "a", "b") == WRONGTYPE
    assert c.call("GEODIST", "str", "a", "b", "parsec") == BAD_UNIT
    # The source's type is checked before any argument.
    for command in (
        ("GEORADIUS", "str", "1", "1", "1", "km"),
        ("GEORADIUS", "str", "x", "1", "1", "km"),
        ("GEORADIUS", "str", "1", "1", "1", "km", "STORE", "d"),
        ("GEORADIUSBYMEMBER", "str", "a", "1", "km"),
        ("GEORADIUS_RO", "str", "1", "1", "1", "km"),
        ("GEORADIUSBYMEMBER_RO", "str", "a", "1", "km"),
        ("GEOSEARCH", "str", "FROMMEMBER", "a", "BYRADIUS", "1", "km"),
        ("GEOSEARCHSTORE", "d", "str", "FROMMEMBER", "a", "BYBOX", "1", "1", "km"),
    ):
        assert c.call(*command) == WRONGTYPE, command
    assert c.call("EXISTS", "d") == 0


def test_georadius_and_geosearch_results(c):
    add_nyc(c)
    assert c.call("GEORADIUS", "nyc", "-73.9798091", "40.7598464", "3", "km", "ASC") == [
        b"central park n/q/r", b"4545", b"union square",
    ]
    assert c.call(
        "GEOSEARCH", "nyc", "FROMLONLAT", "-73.9798091", "40.7598464", "BYBOX", "6", "6", "km", "ASC"
    ) == [b"central park n/q/r", b"4545", b"union square", b"lic market"]
    assert c.call("GEORADIUS", "nyc", "-73.9798091", "40.7598464", "3", "km", "WITHDIST", "ASC") == [
        [b"central park n/q/r", b"0.7750"], [b"4545", b"2.3651"], [b"union square", b"2.7697"],
    ]
    # Unordered: as the cells are scanned.
    assert c.call("GEORADIUS", "nyc", "-73.9798091", "40.7598464", "10", "km", "COUNT", "3", "ANY") == [
        b"wtc one", b"union square", b"central park n/q/r",
    ]
    assert c.call(
        "GEORADIUS", "nyc", "-73.9798091", "40.7598464", "10", "km", "COUNT", "3", "ANY", "ASC"
    ) == [b"central park n/q/r", b"union square", b"wtc one"]
    # COUNT alone means the nearest.
    assert c.call("GEORADIUS", "nyc", "-73.9798091", "40.7598464", "10", "km", "COUNT", "3") == [
        b"central park n/q/r", b"4545", b"union square",
    ]
    assert c.call("GEORADIUS", "nyc", "-73.9798091", "40.7598464", "10", "km", "COUNT", "2", "DESC") == [
        b"wtc one", b"q4",
    ]
    assert c.call("GEORADIUSBYMEMBER", "nyc", "wtc one", "7", "km", "WITHDIST") == [
        [b"wtc one", b"0.0000"], [b"union square", b"3.2544"], [b"central park n/q/r", b"6.7000"],
        [b"4545", b"6.1975"], [b"lic market", b"6.8969"],
    ]
    assert c.call("GEORADIUSBYMEMBER_RO", "nyc", "wtc one", "7", "km", "COUNT", "1") == [b"wtc one"]
    assert c.call("GEORADIUS_RO", "nyc", "-73.9798091", "40.7598464", "3", "km", "DESC") == [
        b"union square", b"4545", b"central park n/q/r",
    ]
    assert c.call("GEOSEARCH", "nyc", "FROMMEMBER", "wtc one", "BYBOX", "14", "14", "km") == [
        b"wtc one", b"union square", b"central park n/q/r", b"4545", b"lic market", b"q4",
    ]
    assert c.call("GEORADIUS", "nyc", "0", "0", "1", "km") == []
    assert c.call("GEORADIUS", "missing", "0", "0", "1", "km") == []
    assert c.call("GEOSEARCH", "missing", "FROMMEMBER", "x", "BYRADIUS", "1", "km") == []
    # A missing source skips even the radius of GEORADIUSBYMEMBER.
    assert c.call("GEORADIUSBYMEMBER", "missing", "x", "abc", "km") == []


def test_huge_count_and_huge_radius(c):
    add_sicily(c)
    assert c.call(
        "GEORADIUS", "Sicily", "15", "37", "200", "km", "COUNT", "9223372036854775807", "WITHDIST"
    ) == [[b"Catania", b"56.4413"], [b"Palermo", b"190.4424"]]
    assert c.call(
        "GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km",
        "COUNT", "9223372036854775807", "ANY",
    ) == [b"Palermo", b"Catania"]
    assert c.call("GEORADIUS", "Sicily", "15", "37", "200", "km", "COUNT", "99999999999999999999") == NOT_INTEGER
    c.call("GEOADD", "users", "-47.271613776683807", "-54.534504198047678", "user_000000")
    assert len(c.call("GEORADIUS", "users", "0", "0", "50000", "km", "WITHCOORD")) == 1
    assert c.call("GEORADIUS", "Sicily", "15", "37", "inf", "km", "ASC") == [b"Catania", b"Palermo"]


def test_search_errors(c):
    add_sicily(c)
    key = ("GEOSEARCH", "Sicily")
    assert c.call("GEORADIUS", "Sicily", "15", "37", "-1", "km") == Err("ERR radius cannot be negative")
    assert c.call("GEORADIUS", "Sicily", "15", "37", "abc", "km") == Err("ERR need numeric radius")
    assert c.call("GEORADIUS", "Sicily", "15", "37", "100", "parsec") == BAD_UNIT
    assert c.call("GEORADIUS", "Sicily", "200", "37", "100", "km") == Err(
        "ERR invalid longitude,latitude pair 200.000000,37.000000"
    )
    assert c.call("GEORADIUS", "Sicily", "15", "37", "100", "km", "COUNT", "0") == Err("ERR COUNT must be > 0")
    assert c.call("GEORADIUS", "Sicily", "15", "37", "100", "km", "COUNT", "-3") == Err("ERR COUNT must be > 0")
    assert c.call("GEORADIUS", "Sicily", "15", "37", "100", "km", "COUNT", "abc") == NOT_INTEGER
    assert c.call("GEORADIUS", "Sicily", "15", "37", "100", "km", "COUNT") == SYNTAX
    assert c.call("GEORADIUS", "Sicily", "15", "37", "100", "km", "ANY") == Err(
        "ERR the ANY argument requires COUNT argument"
    )
    assert c.call("GEORADIUSBYMEMBER", "Sicily", "nope", "100", "km") == NO_MEMBER
    assert c.call("GEORADIUS_RO", "Sicily", "15", "37", "200", "km", "STORE", "x") == SYNTAX
    assert c.call(*key, "FROMMEMBER", "Palermo", "BYBOX", "-1", "1", "km") == Err(
        "ERR height or width cannot be negative"
    )
    assert c.call(*key, "FROMMEMBER", "Palermo", "BYBOX", "a", "1", "km") == Err("ERR need numeric width")
    assert c.call(*key, "FROMMEMBER", "Palermo", "BYBOX", "1", "b", "km") == Err("ERR need numeric height")
    assert c.call(*key, "FROMMEMBER", "Palermo", "BYRADIUS", "1", "km", "BYBOX", "1", "1", "km") == SYNTAX
    assert c.call(*key, "FROMLONLAT", "1", "2", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "km") == SYNTAX
    assert c.call(*key, "FROMMEMBER", "Palermo", "BYBOX", "6", "6", "km", "STOREDIST") == SYNTAX
    assert c.call(*key, "FROMMEMBER", "x", "BYRADIUS", "1", "km", "WITHDIST") == NO_MEMBER
    assert c.call("GeoSearch", "Sicily", "BYRADIUS", "1", "km", "ASC", "WITHDIST") == Err(
        "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for GeoSearch"
    )
    assert c.call(*key, "FROMLONLAT", "1", "2", "ASC", "DESC", "WITHHASH") == Err(
        "ERR exactly one of BYRADIUS and BYBOX can be specified for GEOSEARCH"
    )
    assert c.call("GEOSEARCH", "missing", "FROMMEMBER", "x", "BYBOX", "1", "1", "km", "ANY") == Err(
        "ERR the ANY argument requires COUNT argument"
    )
    assert c.call("GEOSEARCHSTORE", "d", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "km", "WITHDIST") == Err(
        "ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
    )
    assert c.call("GEOSEARCHSTORE", "d", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "km", "STORE", "d") == SYNTAX
    assert c.call("GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "d", "WITHCOORD") == Err(
        "ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
    )
    assert c.call("GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE") == SYNTAX


def test_store_and_storedist(c):
    add_sicily(c)
    assert c.call("GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "d") == 2
    assert c.call("ZRANGE", "d", "0", "-1", "WITHSCORES") == c.call("ZRANGE", "Sicily", "0", "-1", "WITHSCORES")
    assert c.call("GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "d", "STOREDIST", "d2") == 2
    assert c.call("ZRANGE", "d2", "0", "-1", "WITHSCORES") == [
        b"Catania", b"56.441257870158204", b"Palermo", b"190.44242984775784",
    ]
    assert c.call("GEORADIUSBYMEMBER", "Sicily", "Palermo", "500", "km", "STOREDIST", "d3", "DESC", "COUNT", "1") == 1
    assert c.call("ZRANGE", "d3", "0", "-1", "WITHSCORES") == [b"Catania", b"166.27415156960032"]
    assert c.call(
        "GEOSEARCHSTORE", "d4", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "STOREDIST", "COUNT", "1"
    ) == 1
    assert c.call("ZRANGE", "d4", "0", "-1", "WITHSCORES") == [b"Catania", b"56.441257870158204"]
    # An empty result, or a missing source, deletes the destination.
    c.call("SET", "str", "x")
    assert c.call("GEOSEARCHSTORE", "str", "Sicily", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km") == 0
    assert c.call("EXISTS", "str") == 0
    assert c.call("GEOSEARCHSTORE", "d", "missing", "FROMMEMBER", "x", "BYBOX", "1", "1", "km") == 0
    assert c.call("GEORADIUSBYMEMBER", "missing", "x", "1", "km", "STORE", "d2") == 0
    assert c.call("EXISTS", "d", "d2") == 0
    # The destination replaces whatever was there, TTL included.
    c.call("SET", "d", "x", "EX", "100")
    assert c.call("GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "d") == 2
    assert c.call("TTL", "d") == -1
    assert c.call("TYPE", "d") == Status("zset")


def test_georadius_store_keys_are_known(c):
    assert c.call("COMMAND", "GETKEYS", "GEORADIUS", "k", "0", "0", "1", "km", "STORE", "a", "STOREDIST", "b") == [
        b"k", b"a", b"b",
    ]
    assert c.call("COMMAND", "GETKEYS", "GEORADIUS", "k", "0", "0", "1", "km", "STORE") == [b"k"]
    assert c.call("COMMAND", "GETKEYS", "GEORADIUSBYMEMBER", "k", "m", "1", "km", "store", "a") == [b"k", b"a"]
    assert c.call("COMMAND", "GETKEYS", "GEOSEARCHSTORE", "d", "s", "FROMMEMBER", "m", "BYRADIUS", "1", "km") == [
        b"d", b"s",
    ]
    info = c.call("COMMAND", "INFO", "georadius", "geosearch")
    assert info[0][:6] == [
        b"georadius", -6, [Status("write"), Status("denyoom"), Status("movablekeys")], 1, 1, 1,
    ]
    assert info[1][:6] == [b"geosearch", -7, [Status("readonly")], 1, 1, 1]


def test_box_searches(c):
    c.call("GEOADD", "points", "179.5", "36", "point1", "-179.5", "36", "point2")
    assert c.call("GEOSEARCH", "points", "FROMLONLAT", "179", "37", "BYBOX", "400", "400", "km", "ASC") == [
        b"point1", b"point2",
    ]
    assert c.call("GEOSEARCH", "points", "FROMLONLAT", "-179", "37", "BYBOX", "400", "400", "km", "ASC") == [
        b"point2", b"point1",
    ]
    c.call("GEOADD", "Sicily", "12.75", "36.995", "test1", "12.75", "36.50", "test2", "13.00", "36.50", "test3")
    assert c.call("GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "400", "2", "km") == [b"test1"]
    # Near the pole, neighbours of a coarse cell coincide.
    c.call("GEOADD", "k1", "45", "65", "n1", "-135", "85.05", "n2")
    assert c.call("GEORADIUSBYMEMBER", "k1", "n1", "5009431", "m") == [b"n1", b"n2"]


def test_equal_distances_keep_redis_order(c):
    # Points at the same place: the order among them is the sort's.
    args = []
    for i in range(60):
        args += ["10", "20" if i % 3 else "20.001", f"m{i:02}"]
    c.call("GEOADD", "k", *args)
    full = c.call("GEOSEARCH", "k", "FROMLONLAT", "10", "20", "BYRADIUS", "1", "km", "ASC")
    assert full[:40] == [f"m{i:02}".encode() for i in range(60) if i % 3][:40]
    partial = c.call("GEOSEARCH", "k", "FROMLONLAT", "10", "20", "BYRADIUS", "1", "km", "COUNT", "5")
    assert len(partial) == 5 and set(partial) <= set(full[:40])
    assert partial == [b"m22", b"m02", b"m04", b"m05", b"m07"]


def test_resp2_reply_bytes(connect):
    c = connect()
    add_sicily(c)
    c.send("GEOPOS", "Sicily", "Palermo", "nope")
    assert c.read_raw() == (
        b"*2\r\n*2\r\n$20\r\n13.36138933897018433\r\n$20\r\n38.11555639549629859\r\n*-1\r\n"
    )
    c.send("GEOHASH", "Sicily", "Palermo", "nope")
    assert c.read_raw() == b"*2\r\n$11\r\nsqc8b49rny0\r\n$-1\r\n"
    c.send("GEODIST", "Sicily", "Palermo", "nope")
    assert c.read_raw() == b"$-1\r\n"
    c.send("GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "ASC",
           "WITHCOORD", "WITHDIST", "WITHHASH")
    assert c.read_raw() == (
        b"*2\r\n*4\r\n$7\r\nCatania\r\n$7\r\n56.4413\r\n:3479447370796909\r\n"
        b"*2\r\n$20\r\n15.08726745843887329\r\n$20\r\n37.50266842333162032\r\n"
        b"*4\r\n$7\r\nPalermo\r\n$8\r\n190.4424\r\n:3479099956230698\r\n"
        b"*2\r\n$20\r\n13.36138933897018433\r\n$20\r\n38.11555639549629859\r\n"
    )
    c.send("GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km")
    assert c.read_raw() == b"*0\r\n"


def test_resp3_reply_bytes(connect):
    c = connect()
    c.call("HELLO", "3")
    add_sicily(c)
    c.send("GEOPOS", "Sicily", "Palermo", "nope")
    assert c.read_raw() == b"*2\r\n*2\r\n,13.36138933897018433\r\n,38.11555639549629859\r\n_\r\n"
    c.send("GEOHASH", "Sicily", "Palermo", "nope")
    assert c.read_raw() == b"*2\r\n$11\r\nsqc8b49rny0\r\n_\r\n"
    c.send("GEODIST", "Sicily", "Palermo", "nope")
    assert c.read_raw() == b"_\r\n"
    c.send("GEODIST", "Sicily", "Palermo", "Catania", "km")
    assert c.read_raw() == b"$8\r\n166.2742\r\n"
    c.send("GEOPOS", "missing", "a")
    assert c.read_raw() == b"*1\r\n_\r\n"
    c.send("GEORADIUS", "Sicily", "15", "37", "200", "km", "ASC", "WITHCOORD", "WITHDIST", "WITHHASH")
    assert c.read_raw() == (
        b"*2\r\n*4\r\n$7\r\nCatania\r\n$7\r\n56.4413\r\n:3479447370796909\r\n"
        b"*2\r\n,15.08726745843887329\r\n,37.50266842333162032\r\n"
        b"*4\r\n$7\r\nPalermo\r\n$8\r\n190.4424\r\n:3479099956230698\r\n"
        b"*2\r\n,13.36138933897018433\r\n,38.11555639549629859\r\n"
    )


@pytest.mark.parametrize("kind", ["byradius", "bybox"])
def test_large_set_search_matches_a_scan(c, kind):
    # A set past the listpack threshold, searched against a brute-force
    # scan of GEOPOS and GEODIST (exact on both servers).
    import random

    rng = random.Random(11)
    args = []
    for i in range(400):
        args += [f"{rng.uniform(9, 11):.6f}", f"{rng.uniform(44, 46):.6f}", f"p{i}"]
    c.call("GEOADD", "big", *args)
    c.call("GEOADD", "big", "10", "45", "centre")
    assert c.call("OBJECT", "ENCODING", "big") == b"skiplist"
    shape = ["BYRADIUS", "50", "km"] if kind == "byradius" else ["BYBOX", "80", "60", "km"]
    found = c.call("GEOSEARCH", "big", "FROMMEMBER", "centre", *shape, "WITHDIST", "ASC")
    dists = [float(d) for _, d in found]
    assert dists == sorted(dists) and 0 < len(found) < 401
    if kind == "byradius":
        for member, dist in found:
            assert c.call("GEODIST", "big", "centre", member, "km") == dist
        inside = {m for m, _ in found}
        outside = [f"p{i}".encode() for i in range(400) if f"p{i}".encode() not in inside]
        for member in outside[:100]:
            assert float(c.call("GEODIST", "big", "centre", member, "km")) > 49.99
