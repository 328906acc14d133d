//! The smoke tier (`make check`): one test per page of the command
//! reference, which runs the page's examples, in order, on a fresh server
//! and checks that every line prints what the page shows. Each family page
//! walks its family's commands end to end (create, write, read, the
//! common errors), so a broken family shows here within seconds; the full
//! suite (`make test`) has everything else.
//!
//! `PAGES` is the list of pages; tests/reference.rs checks that it names
//! every page of docs/reference/, so a new family's page is smoked as soon
//! as it exists.

/// The reference pages whose examples are run, one test each.
pub const PAGES: &[&str] = &[
    "delayq",
    "like",
    "lock",
    "luckybag",
    "poll",
    "rank",
    "rate",
    "redpacket",
    "spread",
];

macro_rules! smoke {
    ($($page:ident),* $(,)?) => {
        $(
            #[test]
            fn $page() {
                crate::reference::run_page_examples(stringify!($page));
            }
        )*

        /// The tests above, one per entry of [`PAGES`], in its order.
        #[test]
        fn one_test_per_page() {
            assert_eq!(PAGES, &[$(stringify!($page)),*]);
        }
    };
}

smoke!(delayq, like, lock, luckybag, poll, rank, rate, redpacket, spread);
