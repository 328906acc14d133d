//! The LUCKYBAG family's entity handle, [`LuckyBag`], and its commands.

use super::*;

entity!(
    /// A live-stream lucky bag (docs/luckybag.md).
    LuckyBag
);

/// Options of `LUCKYBAG.CREATE` besides `WINNERS`.
#[derive(Clone, Debug, Default)]
pub struct BagOptions {
    pub shards: Option<i64>,
    pub poolcap: Option<i64>,
    pub highscore: Option<String>,
    pub restore: Option<bool>,
    pub ttl: Option<i64>,
}

impl LuckyBag {
    fn call(&self, name: &'static str) -> Call {
        Call::new(name, &self.key)
    }
}

methods!(LuckyBag {
    /// `LUCKYBAG.CREATE`.
    fn create(&self, winners: i64, o: &BagOptions) -> bool {
        self.call("LUCKYBAG.CREATE")
            .arg("WINNERS")
            .arg(winners)
            .opt("SHARDS", o.shards)
            .opt("POOLCAP", o.poolcap)
            .opt("HIGHSCORE", o.highscore.as_deref())
            .opt("RESTORE", o.restore.map(|r| if r { "YES" } else { "NO" }))
            .opt("TTL", o.ttl)
    } => ok;

    /// `LUCKYBAG.JOIN`; `task_pending` joins with `TASK PENDING`.
    fn join(&self, user: &str, task_pending: bool) -> Join {
        self.call("LUCKYBAG.JOIN")
            .arg(user)
            .opt("TASK", task_pending.then_some("PENDING"))
            .opt("IDEM", self.idem.as_deref())
    } => r::join;

    /// `LUCKYBAG.TASK`.
    fn task(&self, user: &str) -> bool {
        self.call("LUCKYBAG.TASK").arg(user)
    } => one;

    /// `LUCKYBAG.LEAVE`.
    fn leave(&self, user: &str) -> bool {
        self.call("LUCKYBAG.LEAVE").arg(user)
    } => one;

    /// `LUCKYBAG.ENTER`.
    fn enter(&self, user: &str) -> bool {
        self.call("LUCKYBAG.ENTER").arg(user)
    } => one;

    /// `LUCKYBAG.DRAW`: the winners, best score first.
    fn draw(&self) -> Vec<Winner> {
        self.call("LUCKYBAG.DRAW")
    } => r::winners;

    /// `LUCKYBAG.RESULT`.
    fn result(&self, user: &str) -> BagResult {
        self.call("LUCKYBAG.RESULT").arg(user)
    } => r::bag_result;

    /// `LUCKYBAG.INFO`: `None` for an unknown bag.
    fn info(&self) -> Option<BagInfo> {
        self.call("LUCKYBAG.INFO")
    } => r::bag_info;
});
