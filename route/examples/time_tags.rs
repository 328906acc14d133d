use std::time::Instant;
fn main() {
    let t = Instant::now();
    let a = hotpath_route::compute_slot_tags();
    let fast = t.elapsed();
    let t = Instant::now();
    let b = hotpath_route::generate_slot_tags();
    let slow = t.elapsed();
    assert!(a.iter().zip(&b).all(|(x, y)| *x == y));
    let t = Instant::now();
    let _ = hotpath_route::slot_tags();
    let first = t.elapsed();
    let t = Instant::now();
    let mut n = 0usize;
    for i in 0..100_000_000u64 {
        n += hotpath_route::slot_tag(std::hint::black_box((i & 0x3fff) as u16)).len();
    }
    let per = t.elapsed().as_nanos() as f64 / 1e8;
    let plain: &[&str] = &a;
    let t = Instant::now();
    let mut m = 0usize;
    for i in 0..100_000_000u64 {
        m += std::hint::black_box(plain)[(std::hint::black_box(i) & 0x3fff) as usize].len();
    }
    let base = t.elapsed().as_nanos() as f64 / 1e8;
    println!("plain slice index {base:.2} ns ({m})");
    println!(
        "compute {fast:?} definition {slow:?} first slot_tags() {first:?} lookup {per:.2} ns ({n})"
    );
}
