#[test]
fn dump_fixture() {
    let f = std::fs::File::open(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/redis-7.0.15.rdb"
    ))
    .unwrap();
    let mut r = keel_rdb::Reader::new(std::io::BufReader::new(f), 1 << 30).unwrap();
    loop {
        let item = r.next().unwrap();
        let s = format!("{item:?}");
        println!("{} {}", r.offset(), &s[..s.len().min(200)]);
        if item == keel_rdb::Item::End {
            break;
        }
    }
}
