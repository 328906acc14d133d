//! The smoke tier (`make check`): the examples of every page of the
//! command reference, each page on a fresh server of its own, all pages at
//! once. Each family page walks its family's commands end to end (create,
//! write, read, the common errors), in order, and every line must print
//! what the page shows, so a broken family shows here within seconds; the
//! full suite (`make test`) has everything else.
//!
//! The pages are read from docs/reference/ (every page but the index and
//! observability.md), so a new family's page is smoked as soon as it
//! exists, with no list to edit.

use std::panic::{catch_unwind, AssertUnwindSafe};

#[test]
fn every_reference_page_prints_what_it_shows() {
    let pages = crate::reference::family_pages();
    assert!(pages.len() >= 9, "docs/reference/ has only {pages:?}");
    let failures: Vec<String> = std::thread::scope(|s| {
        let running: Vec<_> = pages
            .iter()
            .map(|page| {
                let stem = page.file_stem().unwrap().to_string_lossy().into_owned();
                let handle = s.spawn({
                    let stem = stem.clone();
                    move || {
                        catch_unwind(AssertUnwindSafe(|| {
                            crate::reference::run_page_examples(&stem)
                        }))
                    }
                });
                (stem, handle)
            })
            .collect();
        running
            .into_iter()
            .filter_map(|(stem, h)| match h.join().unwrap() {
                Ok(()) => None,
                Err(e) => {
                    let msg = e
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    Some(format!("docs/reference/{stem}.md: {msg}"))
                }
            })
            .collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
