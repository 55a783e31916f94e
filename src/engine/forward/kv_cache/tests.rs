//! The KV cache's tests: appends across growth and rewinds, memory backed before a pass writes it, and a
//! reserved context that is not resident until written.

use super::*;
use half::f16;

/// Appends keep earlier positions across growth, and a rewind then append overwrites in place; an
/// `f16` cache holds each value rounded to `f16`, in half the bytes.
#[test]
fn append_grow_and_rewind() {
    for precision in [KvPrecision::F32, KvPrecision::F16] {
        append_grow_and_rewind_in(precision);
    }
}

fn append_grow_and_rewind_in(precision: KvPrecision) {
    let (n_kv, hd) = (2, 4);
    let row = n_kv * hd;
    let mut c = KvCache::new(1, n_kv, hd, 1024).with_precision(precision);
    let rows = |from: usize, n: usize| -> Vec<f32> {
        (from * row..(from + n) * row)
            .map(|i| i as f32 * 1.001)
            .collect()
    };
    let stored = |x: f32| match precision {
        KvPrecision::F32 => x,
        KvPrecision::F16 => f16::from_f32(x).to_f32(),
    };
    // Position `j`'s kv head `g` as the view reads it, and as appended.
    let key = |view: &Stored, j: usize, g: usize| view.read(j, g, false, hd);
    let appended = |j: usize, g: usize| {
        rows(j, 1)[g * hd..][..hd]
            .iter()
            .map(|&x| stored(x))
            .collect::<Vec<_>>()
    };
    let rounded = appended(299, 1) != rows(299, 1)[hd..];
    assert_eq!(rounded, precision == KvPrecision::F16, "{precision:?}");
    c.append(0, 0, &rows(0, 200), &rows(0, 200)).unwrap();
    c.set_len(200);
    let view = c.append(0, 200, &rows(200, 100), &rows(200, 100)).unwrap();
    assert_eq!(view.len(), 300);
    for j in 0..300 {
        for g in 0..n_kv {
            assert_eq!(
                key(&view, j, g),
                appended(j, g),
                "position {j} head {g} survives a second append"
            );
        }
    }
    c.set_len(300);
    c.truncate(10);
    let mut other = rows(10, 1);
    other[0] = -1.0;
    let view = c.append(0, 10, &other, &other).unwrap();
    assert_eq!(view.len(), 11);
    assert_eq!(view.read(10, 0, true, hd)[0], -1.0);
    assert_eq!(key(&view, 9, 1), appended(9, 1));
    c.set_len(11);
    assert_eq!(c.bytes(), 2 * 11 * row * precision.bytes());
    assert!(
        c.append(0, 1020, &rows(0, 5), &rows(0, 5)).is_err(),
        "past the context"
    );
}

/// Bytes of the cache's mappings the system holds in memory (`mincore`), whatever else the
/// process allocates meanwhile.
#[cfg(target_os = "linux")]
fn resident_bytes(c: &KvCache) -> usize {
    let page = page_size();
    let regions = c.layers.iter().flat_map(|l| [&l.k, &l.v]);
    let maps = regions.filter_map(|r| r.map.as_ref());
    maps.map(|m| {
        let mut pages = vec![0u8; m.len().div_ceil(page)];
        // SAFETY: the range is one live, page-aligned mapping, and `pages` has a byte per page.
        let rc = unsafe { libc::mincore(m.as_ptr() as *mut _, m.len(), pages.as_mut_ptr()) };
        assert_eq!(rc, 0, "mincore");
        pages.iter().filter(|&&b| b & 1 == 1).count() * page
    })
    .sum()
}

/// Writes positions `0..positions` of every layer (keys and values all 0.5); returns those rows.
#[cfg(target_os = "linux")]
fn write_front(c: &mut KvCache, positions: usize) -> Vec<f32> {
    let rows = vec![0.5f32; positions * c.row()];
    for layer in 0..c.layers.len() {
        c.append(layer, 0, &rows, &rows).unwrap();
    }
    rows
}

#[cfg(target_os = "linux")]
fn page_size() -> usize {
    // SAFETY: sysconf reads a constant of the system.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

/// `prepare` backs the positions a pass will write (and a little more) before the pass, so writing
/// them makes nothing new resident; the rest of the context stays unbacked.
#[cfg(target_os = "linux")]
#[test]
fn a_prepared_pass_writes_memory_already_backed() {
    let (layers, n_kv, hd, max_len, end) = (4, 3, 64, 8192, 700);
    let row = n_kv * hd;
    let mut c = KvCache::new(layers, n_kv, hd, max_len);
    c.prepare(end).unwrap();
    let backed = resident_bytes(&c);
    let (least, most) = (end * row * 4, end * row * 4 + 2 * super::BACK_AHEAD);
    assert!(
        (2 * layers * least..=2 * layers * most).contains(&backed),
        "{backed} bytes backed for {end} positions"
    );
    write_front(&mut c, end);
    assert_eq!(
        resident_bytes(&c),
        backed,
        "the pass's writes found their pages"
    );
    c.prepare(end).unwrap();
    assert_eq!(
        resident_bytes(&c),
        backed,
        "a second prepare asks for nothing"
    );
}

/// Where the system refuses to back pages on request, `populate` writes each once: every page is
/// then resident, and what was written there is kept.
#[cfg(target_os = "linux")]
#[test]
fn touched_pages_are_backed_and_keep_their_bytes() {
    let mut c = KvCache::new(1, 1, 64, 4096);
    c.append(0, 0, &[7.0; 64], &[7.0; 64]).unwrap();
    let len = 64 << 10;
    super::touch_pages(&mut c.layers[0].k.map.as_mut().unwrap()[..len]);
    assert_eq!(
        resident_bytes(&c),
        len + page_size(),
        "the keys' 64 KB and the value row's one page"
    );
    assert_eq!(
        c.view(0).read(0, 0, false, 64),
        [7.0; 64],
        "the written keys are kept"
    );
}

/// The cache reserves the whole context but costs only what it holds: SmolLM2's shape (30 layers,
/// 3 kv heads of 64) over 8192 positions reserves 377 MB, and 1100 written positions (51 MB) are
/// resident to the page (storage grown by doubling would hold 2048 positions: 94 MB). Rewinding
/// and writing again reuses the same storage.
#[cfg(target_os = "linux")]
#[test]
fn the_reserved_context_is_not_resident_until_written() {
    let (layers, n_kv, hd, max_len, written) = (30, 3, 64, 8192, 1100);
    let row = n_kv * hd;
    let mut c = KvCache::new(layers, n_kv, hd, max_len);
    let rows = write_front(&mut c, written);
    c.set_len(written);
    // Each of the 60 mappings holds its written floats, rounded up to a page.
    let page = page_size();
    let held = 2 * layers * (written * row * 4).div_ceil(page) * page;
    assert_eq!(c.bytes(), 2 * layers * written * row * 4);
    assert_eq!(
        resident_bytes(&c),
        held,
        "only the written pages are resident"
    );
    c.truncate(10);
    for layer in 0..layers {
        let Stored::F32(view) = c.append(layer, 10, &rows[..row], &rows[..row]).unwrap() else {
            panic!("an f32 cache")
        };
        assert_eq!(view.len, 11);
        assert_eq!(view.k.len(), written * row, "the written front stays");
    }
    assert_eq!(
        resident_bytes(&c),
        held,
        "a rewind writes into the same pages"
    );
}
