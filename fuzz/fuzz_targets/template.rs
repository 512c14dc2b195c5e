//! Templates as playbook values hold them (`Templates::render_str`, with
//! the filters benchrig adds), on a small context: rendered or refused,
//! within the render's fuel. As `template_target` in
//! orchestrator/tests/fuzz_parsers.rs.
#![no_main]

use benchrig::template::Templates;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value as Json};
use std::sync::OnceLock;

fuzz_target!(|data: &[u8]| {
    if data.len() > 16 << 10 {
        return;
    }
    static T: OnceLock<(Templates, Json)> = OnceLock::new();
    let (t, ctx) = T.get_or_init(|| {
        let ctx = json!({"size": "16M", "n": 3, "fs": ["ext4", "xfs"], "d": [{"name": "hdd0"}], "m": {"k": 1}});
        (Templates::new(), ctx)
    });
    let _ = t.render_str(&String::from_utf8_lossy(data), ctx);
});
