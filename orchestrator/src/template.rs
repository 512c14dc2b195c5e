//! Templates in playbook values: minijinja with Ansible's habits.
//!
//! Undefined variables are errors that name the variable, never empty
//! strings. A value that is exactly one `{{ expression }}` keeps its type
//! (a list stays a list), as Ansible's native types do; anything else
//! renders to a string.

use crate::diagnostic::{ConfigError, Loc, Undefined};
use minijinja::value::Serde;
use minijinja::{Environment, UndefinedBehavior, Value};
use serde_json::Value as Json;

pub struct Templates {
    env: Environment<'static>,
    /// Variables every context sees unless it sets its own, converted for
    /// minijinja once (`plan::templates`: the inventory's `groups`, the
    /// same on every host). In each context they were converted again at
    /// every render, which made planning quadratic in hosts.
    shared: serde_json::Map<String, Json>,
}

/// Why a template did not render.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// It uses values its context lacks (which, and the template, kept so a
    /// caller can tell "facts are not known yet" from a typo).
    #[error("{message}")]
    Undefined { undefined: Undefined, message: String },
    /// Anything else: a syntax error, a failing filter, a runaway value.
    #[error("{0}")]
    Invalid(String),
}

impl TemplateError {
    /// The error in the file, at the value that holds the template.
    pub fn at(self, loc: &Loc) -> ConfigError {
        match self {
            TemplateError::Undefined { undefined, message } => ConfigError::at(loc, message).with_undefined(undefined),
            TemplateError::Invalid(message) => ConfigError::at(loc, message),
        }
    }
}

/// Fuel for one render (minijinja's `fuel` feature): about a million
/// instructions or 64 MiB of data. A playbook's template is a line of
/// arithmetic or a filter or two; this stops nested `{% for %}` loops and
/// `'x' * 10**9` from running or allocating without end.
const FUEL: u64 = 1_000_000;

/// The most items (list elements and mapping entries, at every level) a
/// value may have. Repeating a list (`[1] * 10**9`) is lazy in minijinja and
/// costs no fuel; turning it into JSON would allocate every item.
pub const MAX_ITEMS: usize = 1_000_000;

impl Default for Templates {
    fn default() -> Self {
        Self::new()
    }
}

impl Templates {
    pub fn new() -> Self {
        Self::with_shared(serde_json::Map::new())
    }

    /// Templates whose every context also sees `shared` (below the
    /// context's own variables of the same name).
    pub fn with_shared(shared: serde_json::Map<String, Json>) -> Self {
        let mut env = Environment::new();
        for (name, value) in &shared {
            env.add_global(name.clone(), Value::from(Serde(value)));
        }
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_fuel(Some(FUEL));
        env.add_filter("to_json", |v: Value| -> Result<String, minijinja::Error> {
            serde_json::to_string(&v)
                .map_err(|e| minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, e.to_string()))
        });
        env.add_filter("from_json", |s: String| -> Result<Value, minijinja::Error> {
            let j: Json = serde_json::from_str(&s).map_err(|e| {
                minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, format!("from_json: {e}"))
            })?;
            Ok(Value::from(Serde(j)))
        });
        env.add_filter("regex_replace", |s: String, pat: String, rep: String| -> Result<String, minijinja::Error> {
            let re = regex::Regex::new(&pat).map_err(|e| {
                minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, format!("regex_replace: {e}"))
            })?;
            // Ansible (Python) writes groups as \1; the regex crate as ${1}.
            let rep = regex::Regex::new(r"\\(\d+)").expect("static regex").replace_all(&rep, "$${$1}").into_owned();
            Ok(re.replace_all(&s, rep.as_str()).into_owned())
        });
        env.add_filter("combine", |a: Value, rest: minijinja::value::Rest<Value>| -> Result<Value, minijinja::Error> {
            let mut out: serde_json::Map<String, Json> = match serde_json::to_value(&a) {
                Ok(Json::Object(m)) => m,
                _ => {
                    return Err(minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, "combine: not a mapping"))
                }
            };
            for b in rest.iter() {
                if let Ok(Json::Object(m)) = serde_json::to_value(b) {
                    out.extend(m);
                }
            }
            Ok(Value::from(Serde(out)))
        });
        // Ansible's `bool`: yes/on/1/true (any case) and 1 are true, all else
        // false; minijinja's would call every non-empty string true.
        env.add_filter("bool", |v: Value| -> bool {
            if let Some(s) = v.as_str() {
                return ["yes", "on", "1", "true", "y", "t"].contains(&s.trim().to_lowercase().as_str());
            }
            match v.as_i64() {
                Some(n) => n == 1,
                None => v.is_true(),
            }
        });
        env.add_filter("ternary", |v: Value, yes: Value, no: Value| if v.is_true() { yes } else { no });
        env.add_filter("basename", |s: String| s.rsplit('/').next().unwrap_or_default().to_string());
        env.add_filter("dirname", |s: String| match s.rfind('/') {
            Some(0) => "/".to_string(),
            Some(i) => s[..i].to_string(),
            None => String::new(),
        });
        env.add_filter("regex_search", |s: String, pat: String| -> Result<Value, minijinja::Error> {
            let re = regex::Regex::new(&pat).map_err(|e| {
                minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, format!("regex_search: {e}"))
            })?;
            Ok(re.find(&s).map(|m| Value::from(m.as_str())).unwrap_or(Value::from(())))
        });
        env.add_filter("flatten", |v: Value| -> Result<Value, minijinja::Error> {
            fn walk(v: &Json, out: &mut Vec<Json>) {
                match v {
                    Json::Array(items) => items.iter().for_each(|i| walk(i, out)),
                    other => out.push(other.clone()),
                }
            }
            let mut out = Vec::new();
            walk(&serde_json::to_value(&v).map_err(json_err)?, &mut out);
            Ok(Value::from(Serde(out)))
        });
        env.add_filter("dict2items", |v: Value| -> Result<Value, minijinja::Error> {
            let Json::Object(m) = serde_json::to_value(&v).map_err(json_err)? else {
                return Err(minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, "dict2items: not a mapping"));
            };
            let items: Vec<Json> = m.into_iter().map(|(k, v)| serde_json::json!({"key": k, "value": v})).collect();
            Ok(Value::from(Serde(items)))
        });
        env.add_filter("items2dict", |v: Value| -> Result<Value, minijinja::Error> {
            let Json::Array(items) = serde_json::to_value(&v).map_err(json_err)? else {
                return Err(minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, "items2dict: not a list"));
            };
            let mut out = serde_json::Map::new();
            for i in items {
                let key = i.get("key").and_then(Json::as_str).ok_or_else(|| {
                    minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, "items2dict: an item has no `key`")
                })?;
                out.insert(key.to_string(), i.get("value").cloned().unwrap_or(Json::Null));
            }
            Ok(Value::from(Serde(out)))
        });
        Templates { env, shared }
    }

    /// Whether every context sees `name` without holding it.
    pub fn shares(&self, name: &str) -> bool {
        self.shared.contains_key(name)
    }

    pub fn is_template(s: &str) -> bool {
        s.contains("{{") || s.contains("{%")
    }

    /// Render every string inside a JSON value against `ctx`.
    pub fn render(&self, value: &Json, ctx: &Json) -> Result<Json, TemplateError> {
        match value {
            Json::String(s) if Self::is_template(s) => self.render_str(s, ctx),
            Json::Array(items) => items.iter().map(|v| self.render(v, ctx)).collect::<Result<_, _>>().map(Json::Array),
            Json::Object(m) => m
                .iter()
                .map(|(k, v)| Ok((k.clone(), self.render(v, ctx)?)))
                .collect::<Result<_, TemplateError>>()
                .map(Json::Object),
            other => Ok(other.clone()),
        }
    }

    pub fn render_str(&self, s: &str, ctx: &Json) -> Result<Json, TemplateError> {
        let ctxv = Value::from(Serde(ctx));
        if let Some(expr) = single_expression(s) {
            let compiled = self.env.compile_expression(expr).map_err(|e| TemplateError::Invalid(describe(&e, s)))?;
            let v = compiled.eval(ctxv).map_err(|e| self.explain_undefined(e, s, ctx))?;
            let mut budget = MAX_ITEMS;
            if !within(&v, &mut budget) {
                return Err(TemplateError::Invalid(format!("`{s}` gives a value of more than {MAX_ITEMS} items")));
            }
            // Strict undefined still lets `[typo]` build a list holding an
            // undefined, which would serialize as null: an error here too.
            if holds_undefined(&v) {
                return Err(self.undefined_message(s, s, ctx));
            }
            return serde_json::to_value(&v).map_err(|e| TemplateError::Invalid(format!("`{s}`: {e}")));
        }
        self.env.render_str(s, ctxv).map(Json::String).map_err(|e| self.explain_undefined(e, s, ctx))
    }

    /// A `when` condition: a bare expression, true or false by Jinja's
    /// truthiness. Undefined is an error naming the variable, as anywhere.
    pub fn condition(&self, expr: &str, ctx: &Json) -> Result<bool, TemplateError> {
        let shown = format!("when: {expr}");
        let compiled = self.env.compile_expression(expr).map_err(|e| TemplateError::Invalid(describe(&e, &shown)))?;
        let as_template = format!("{{{{ {expr} }}}}");
        let v = compiled.eval(Value::from(Serde(ctx))).map_err(|e| {
            if e.kind() == minijinja::ErrorKind::UndefinedError {
                self.undefined_message(&as_template, &shown, ctx)
            } else {
                TemplateError::Invalid(describe(&e, &shown))
            }
        })?;
        if v.is_undefined() {
            return Err(self.undefined_message(&as_template, &shown, ctx));
        }
        Ok(v.is_true())
    }

    fn explain_undefined(&self, e: minijinja::Error, s: &str, ctx: &Json) -> TemplateError {
        if e.kind() == minijinja::ErrorKind::UndefinedError {
            self.undefined_message(s, s, ctx)
        } else {
            TemplateError::Invalid(describe(&e, s))
        }
    }

    /// Name the variables the template `source` uses that the context
    /// lacks; `s` is how the error shows it.
    fn undefined_message(&self, source: &str, s: &str, ctx: &Json) -> TemplateError {
        let used = self.env.template_from_str(source).map(|t| t.undeclared_variables(true)).unwrap_or_default();
        let mut missing: Vec<String> = used
            .into_iter()
            .filter(|name| {
                let mut parts = name.split('.');
                let first = parts.next().unwrap_or_default();
                let mut cur = ctx.get(first).or_else(|| self.shared.get(first));
                for part in parts {
                    cur = cur.and_then(|c| c.get(part));
                }
                cur.is_none()
            })
            .collect();
        missing.sort();
        let message = match missing.as_slice() {
            [] => format!("`{s}` uses an undefined value"),
            [one] => format!("undefined variable `{one}` in `{s}`"),
            many => format!(
                "undefined variables {} in `{s}`",
                many.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", ")
            ),
        };
        TemplateError::Undefined { undefined: Undefined { missing, template: s.to_string() }, message }
    }
}

fn json_err(e: serde_json::Error) -> minijinja::Error {
    minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, e.to_string())
}

/// Does `v` have at most `budget` items, counting every level? Iterates
/// lazily, so a huge lazy sequence is refused without being built.
fn within(v: &Value, budget: &mut usize) -> bool {
    use minijinja::value::ValueKind;
    let is_map = match v.kind() {
        ValueKind::Map => true,
        ValueKind::Seq | ValueKind::Iterable => false,
        _ => return true,
    };
    let Ok(items) = v.try_iter() else { return true };
    for item in items {
        let Some(left) = budget.checked_sub(1) else { return false };
        *budget = left;
        let child = if is_map { v.get_item(&item).unwrap_or_default() } else { item };
        if !within(&child, budget) {
            return false;
        }
    }
    true
}

/// Whether `v` is undefined or holds an undefined value at any level.
/// (Called once `within` has bounded the value's size.)
fn holds_undefined(v: &Value) -> bool {
    use minijinja::value::ValueKind;
    match v.kind() {
        ValueKind::Undefined => true,
        ValueKind::Map => {
            v.try_iter().is_ok_and(|mut keys| keys.any(|k| holds_undefined(&v.get_item(&k).unwrap_or_default())))
        }
        // A lazy sequence too (`a + b`, `[x] * 2`, slices): `within` bounded it.
        ValueKind::Seq | ValueKind::Iterable => v.try_iter().is_ok_and(|mut items| items.any(|i| holds_undefined(&i))),
        _ => false,
    }
}

fn describe(e: &minijinja::Error, s: &str) -> String {
    let detail = e.detail().map(|d| format!(": {d}")).unwrap_or_default();
    format!("template `{s}`: {}{detail}", e.kind())
}

/// `{{ expr }}` and nothing else around it.
fn single_expression(s: &str) -> Option<&str> {
    let inner = s.trim().strip_prefix("{{")?.strip_suffix("}}")?;
    (!inner.contains("{{") && !inner.contains("}}")).then_some(inner.trim())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn t() -> Templates {
        Templates::new()
    }

    #[test]
    fn native_types_for_single_expressions() {
        let ctx = json!({"fs": ["ext4", "xfs"], "n": 3, "d": [{"name": "hdd0"}]});
        assert_eq!(t().render_str("{{ fs }}", &ctx).unwrap(), json!(["ext4", "xfs"]));
        assert_eq!(t().render_str("{{ n * 2 }}", &ctx).unwrap(), json!(6));
        assert_eq!(t().render_str("{{ d[0].name }}", &ctx).unwrap(), json!("hdd0"));
        assert_eq!(t().render_str("n={{ n }}", &ctx).unwrap(), json!("n=3"));
    }

    #[test]
    fn shared_variables_are_seen_everywhere_below_the_context() {
        let shared = json!({"groups": {"lab": ["h1", "h2"]}}).as_object().cloned().unwrap();
        let t = Templates::with_shared(shared);
        assert!(t.shares("groups") && !Templates::new().shares("groups"));
        let ctx = json!({"n": 1});
        assert_eq!(t.render_str("{{ groups.lab }}", &ctx).unwrap(), json!(["h1", "h2"]));
        assert_eq!(t.render_str("{{ groups.lab | length }} hosts", &ctx).unwrap(), json!("2 hosts"));
        assert!(t.condition("'h2' in groups['lab']", &ctx).unwrap());
        let own = json!({"groups": {"lab": ["mine"]}});
        assert_eq!(t.render_str("{{ groups.lab }}", &own).unwrap(), json!(["mine"]), "the context's own wins");
        let e = t.render_str("{{ groups.lab[0] ~ groups.nope }}", &ctx).unwrap_err();
        assert_eq!(e.to_string(), "undefined variable `groups.nope` in `{{ groups.lab[0] ~ groups.nope }}`");
    }

    #[test]
    fn undefined_is_an_error_naming_the_variable() {
        let e = t().render_str("{{ size }}", &json!({})).unwrap_err();
        assert_eq!(e.to_string(), "undefined variable `size` in `{{ size }}`");
        let e = t().render_str("file-{{ name }}.dat", &json!({"x": 1})).unwrap_err();
        assert!(e.to_string().contains("`name`"), "{e}");
        let e = t().render_str("{{ a.b }}", &json!({"a": {}})).unwrap_err();
        assert!(e.to_string().contains("`a.b`"), "{e}");
        let e = t().render_str("{{ [1, {'k': nope}] }}", &json!({})).unwrap_err();
        assert_eq!(e.to_string(), "undefined variable `nope` in `{{ [1, {'k': nope}] }}`");
        // Lazy sequences hold undefined values too (minijinja cannot always
        // name the variable behind a slice; it is an undefined error all the same).
        for lazy in ["{{ [1] + [nope] }}", "{{ [nope] * 2 }}", "{{ [nope][0:] }}"] {
            let e = t().render_str(lazy, &json!({})).unwrap_err();
            assert!(matches!(e, TemplateError::Undefined { .. }), "{lazy}: {e}");
            assert!(lazy.contains("[0:]") || e.to_string().contains("`nope`"), "{lazy}: {e}");
        }
    }

    #[test]
    fn default_filter_covers_undefined() {
        assert_eq!(t().render_str("{{ reps | default(3) }}", &json!({})).unwrap(), json!(3));
    }

    #[test]
    fn ansible_filters() {
        let ctx = json!({"a": {"x": 1}, "b": {"y": 2}, "s": "sda1", "j": "{\"k\": [1]}"});
        assert_eq!(t().render_str("{{ a | combine(b) }}", &ctx).unwrap(), json!({"x": 1, "y": 2}));
        assert_eq!(t().render_str("{{ s | regex_replace('([a-z]+)\\\\d', '\\\\1') }}", &ctx).unwrap(), json!("sda"));
        assert_eq!(t().render_str("{{ (j | from_json).k }}", &ctx).unwrap(), json!([1]));
        assert_eq!(t().render_str("{{ a | to_json }}", &ctx).unwrap(), json!("{\"x\":1}"));
        assert_eq!(t().render_str("{{ 'yes' | bool }}", &ctx).unwrap(), json!(true));
    }

    #[test]
    fn runaway_templates_are_errors() {
        // These allocated gigabytes (the list one aborted the process) or looped ~forever.
        let ctx = json!({});
        for s in [
            "{{ [1] * 100000000 }}",
            "{{ [[1] * 10000] * 10000 }}",
            "{{ 'a' * 1000000000 }}",
            "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}",
        ] {
            assert!(t().render_str(s, &ctx).is_err(), "{s}");
        }
        assert_eq!(t().render_str("{{ [1] * 1000 }}", &ctx).unwrap().as_array().unwrap().len(), 1000);
        assert_eq!(t().render_str("{{ range(100) | sum }}", &ctx).unwrap(), json!(4950));
    }

    #[test]
    fn render_walks_structures() {
        let v = json!({"size": "{{ s }}", "list": ["{{ n }}", 4], "plain": "x"});
        assert_eq!(
            t().render(&v, &json!({"s": "64M", "n": 1})).unwrap(),
            json!({"size": "64M", "list": [1, 4], "plain": "x"})
        );
    }

    #[test]
    fn the_filters_ansible_users_reach_for() {
        let ctx = json!({
            "devs": [{"name": "a", "ssd": true, "gb": 10}, {"name": "b", "ssd": false, "gb": 20}],
            "n": "12", "x": 1.5, "words": ["b", "a", "b"],
        });
        let r = |e: &str| t().render_str(e, &ctx).unwrap();
        assert_eq!(r("{{ devs | selectattr('ssd') | map(attribute='name') | list }}"), json!(["a"]));
        assert_eq!(r("{{ devs | rejectattr('ssd') | map(attribute='name') | join(',') }}"), json!("b"));
        assert_eq!(r("{{ n | int + 1 }}"), json!(13));
        assert_eq!(r("{{ x | float }}"), json!(1.5));
        assert_eq!(r("{{ 3 | string }}"), json!("3"));
        assert_eq!(r("{{ words | unique | list | length }}"), json!(2));
        assert_eq!(r("{{ words | min }}-{{ words | max }}"), json!("a-b"));
        assert_eq!(r("{{ [1, 2, 3, 4] | select('even') | list }}"), json!([2, 4]));
        assert_eq!(r("{{ [1, 2, 3] | reject('odd') | list }}"), json!([2]));
        assert_eq!(r("{{ 'no' | bool }}"), json!(false));
        assert_eq!(r("{{ missing | default('d') }}"), json!("d"));
        assert_eq!(r("{{ ['Yes', 'off', 1, 2, true] | map('bool') | list }}"), json!([true, false, true, false, true]));
        assert_eq!(r("{{ (n == '12') | ternary('a', 'b') }}"), json!("a"));
        assert_eq!(r("{{ '/dev/disk/sdb' | basename }} {{ '/dev/sdb' | dirname }}"), json!("sdb /dev"));
        assert_eq!(r("{{ 'kernel 6.1.0-9' | regex_search('[0-9]+[.][0-9]+') }}"), json!("6.1"));
        assert_eq!(r("{{ [[1, [2]], 3] | flatten }}"), json!([1, 2, 3]));
        assert_eq!(r("{{ {'a': 1} | dict2items }}"), json!([{"key": "a", "value": 1}]));
        assert_eq!(r("{{ {'a': 1} | dict2items | items2dict }}"), json!({"a": 1}));
    }

    #[test]
    fn conditions_are_bare_expressions() {
        let ctx = json!({"fs": "xfs", "n": 0, "l": []});
        assert!(t().condition("fs == 'xfs'", &ctx).unwrap());
        assert!(!t().condition("n", &ctx).unwrap());
        assert!(!t().condition("l", &ctx).unwrap());
        assert!(t().condition("fs is defined and nope is not defined", &ctx).unwrap());
        let e = t().condition("size > 3", &ctx).unwrap_err();
        assert_eq!(e.to_string(), "undefined variable `size` in `when: size > 3`");
    }
}
