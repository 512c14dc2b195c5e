//! The keys each level of a playbook takes, each with what it means and the
//! shape of its value: one table per level. The parser checks keys against
//! these tables (and lists them in its did-you-mean), and `schema` builds
//! the JSON Schema editors use from the same tables, so the two cannot
//! disagree on a key. Step arguments are not here: they are the wire
//! types' fields (`benchrig_wire::args`), read by both in the same way.

use super::Fresh;

/// One key of a level.
pub struct Key {
    pub name: &'static str,
    /// What it means (the schema's description).
    pub about: &'static str,
    /// The values the parser takes.
    pub shape: Shape,
    /// The level must have it.
    pub required: bool,
}

/// A key the level may leave out.
const fn key(name: &'static str, about: &'static str, shape: Shape) -> Key {
    Key { name, about, shape, required: false }
}

/// A key the level must have.
const fn must(name: &'static str, about: &'static str, shape: Shape) -> Key {
    Key { name, about, shape, required: true }
}

/// A value as the parser reads it. A template (`{{ … }}`) is accepted only
/// where a shape says so: where the parser or the planner renders it
/// before checking.
pub enum Shape {
    /// Anything (a variable's value).
    Any,
    /// `key:` with nothing after it, which the parser reads as an empty
    /// list or mapping where it expects one.
    Null,
    Str,
    /// A string that does not match this pattern (ECMA-262 regex).
    StrNot(&'static str),
    /// A string that matches this pattern.
    Pattern(&'static str),
    /// A template string, rendered later (per cell).
    Template,
    /// A string, number, boolean or null, read as text.
    Scalar,
    Bool,
    /// A whole number from `min`, up to `max`.
    Int {
        min: i64,
        max: Option<i64>,
    },
    /// A number from `min` (or above it, when `above`), up to `max`.
    Number {
        min: Option<f64>,
        above: bool,
        max: Option<f64>,
    },
    /// One of these words.
    Word(&'static [&'static str]),
    /// A list of at least `min` of these, `distinct` or not.
    List {
        of: &'static Shape,
        min: usize,
        distinct: bool,
    },
    /// A mapping of any names, each to this.
    Map(&'static Shape),
    /// A mapping whose names match `names`, each to `of`.
    Named {
        names: &'static str,
        of: &'static Shape,
    },
    /// A mapping of these keys and no other.
    Keys(&'static [Key]),
    /// A mapping of these keys and any other name, whose value is `others`.
    Open {
        keys: &'static [Key],
        others: &'static Shape,
        about_others: &'static str,
    },
    AnyOf(&'static [Shape]),
    /// A list of steps (`STEP`, and one action), or null.
    Steps,
    /// Profile name to `PROFILE` keys; a new name needs `fstype` and `mkfs`.
    Profiles,
}

/// A list of any length.
const fn list(of: &'static Shape) -> Shape {
    Shape::List { of, min: 0, distinct: false }
}

/// A rule between keys of one level: when `when` holds, `then` must.
pub struct Rule {
    pub when: Cond,
    pub then: Cond,
    /// The parser's words for it.
    pub about: &'static str,
}

/// What a rule says of a mapping.
pub enum Cond {
    Has(&'static str),
    /// The key is there with this word.
    Is(&'static str, &'static str),
    /// The key is there with a non-empty list.
    NonEmpty(&'static str),
    Not(&'static Cond),
}

/// `"{{ size }}"`, `"{% if … %}"`: what `Templates::is_template` looks for.
pub const TEMPLATE_PATTERN: &str = r"\{\{|\{%";

const TEMPLATED_COUNT: Shape = Shape::AnyOf(&[Shape::Int { min: 1, max: None }, Shape::Template]);
const TAGS: Shape = Shape::AnyOf(&[Shape::Scalar, list(&Shape::Scalar)]);
const WORDS: Shape = Shape::AnyOf(&[Shape::Str, list(&Shape::Scalar)]);
/// `serial`'s share of hosts: `"30%"`.
const PERCENT: Shape = Shape::Pattern(r"^\s*\+?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\s*%\s*$");
const BATCH: Shape = Shape::AnyOf(&[Shape::Int { min: 1, max: None }, PERCENT]);
/// A `when` condition: `when: "{{ x }}"` is refused (write `when: x`).
const CONDITION: Shape = Shape::AnyOf(&[Shape::Bool, Shape::StrNot(r"^\s*\{\{[\s\S]*\}\}\s*$")]);

pub const PLAY: &[Key] = &[
    key("name", "The play's name, shown in output and stored with the run.", Shape::Scalar),
    must(
        "hosts",
        "The hosts the play runs on: a host pattern (`all`, a group, `web:!web3`) or a list of them.",
        Shape::AnyOf(&[Shape::Str, list(&Shape::Str)]),
    ),
    key("vars", "Variables for templates (`{{ size }}`), in order: a later one may use an earlier one.", Shape::AnyOf(&[Shape::Null, Shape::Map(&Shape::Any)])),
    key(
        "vars_files",
        "Files of variables beside the playbook (no template), read after `vars`, so they win.",
        Shape::AnyOf(&[Shape::Null, list(&Shape::StrNot(TEMPLATE_PATTERN))]),
    ),
    key("become", "Run the agent as `become_user` (root by default) on the play's hosts.", Shape::Bool),
    key("become_user", "The user `become` runs the agent as.", Shape::Str),
    key(
        "serial",
        "Hosts in batches, each run to its end before the next: a number of hosts, a share (`\"30%\"`), or a list of them (the last repeats). Plays without roles only.",
        Shape::AnyOf(&[BATCH, Shape::List { of: &BATCH, min: 1, distinct: false }]),
    ),
    key(
        "max_fail_percentage",
        "Stop the play when more than this share (0 to 100) of a batch's hosts failed.",
        Shape::Number { min: Some(0.0), above: false, max: Some(100.0) },
    ),
    key("any_errors_fatal", "A failed cell on any host stops the play on every host.", Shape::Bool),
    key("tags", "Tags every step of the play inherits (`--tags`, `--skip-tags`): a list, or one string, comma-separated.", TAGS),
    key(
        "cell_order",
        "The order a host runs the cells and repetitions in: `interleaved` (the default: repetition 1 of every cell, then 2, …), `shuffled` (the same, in a random order per round) or `sequential` (each cell's repetitions back to back).",
        Shape::Word(&["sequential", "interleaved", "shuffled"]),
    ),
    key("seed", "The seed of `cell_order: shuffled` (else the run picks one and records it).", Shape::Int { min: 0, max: None }),
    key(
        "profiles",
        "Filesystem profiles: overrides of the built-in ones (`ext4`, `xfs`, `btrfs`, …) and new ones, by name.",
        Shape::AnyOf(&[Shape::Null, Shape::Profiles]),
    ),
    key(
        "matrix",
        "The parameter matrix: axes (a name and its values), the play runs once per point of their product; `exclude` and `include` adjust the points.",
        Shape::AnyOf(&[
            Shape::Null,
            Shape::Open {
                keys: MATRIX,
                others: &Shape::AnyOf(&[Shape::Scalar, list(&Shape::Any)]),
                about_others: "An axis: its values (a list, one value, or a template giving a list).",
            },
        ]),
    ),
    key(
        "repeat",
        "Repetitions of each cell: a number (or a template giving one), or adaptive, until the confidence interval is narrow enough (`{min: 3, max: 10, ci_pct: 2}`).",
        Shape::AnyOf(&[TEMPLATED_COUNT, Shape::Keys(REPEAT)]),
    ),
    key(
        "roles",
        "Roles the play's hosts take (`[server, client]`): each cell runs on one host per role, and a step names its `role`.",
        Shape::AnyOf(&[Shape::Null, Shape::List { of: &Shape::Str, min: 0, distinct: true }]),
    ),
    key(
        "assign",
        "Which assignments of hosts to roles the play runs: `all` (every one: both directions with two hosts) or `first`.",
        Shape::Word(&["all", "first"]),
    ),
    key(
        "fresh",
        "How often a cell's setup and teardown run: `cell` (once per visit, the default), `round` (once per round for identical setups) or `repetition` (before each), or a template giving one.",
        Shape::AnyOf(&[Shape::Word(&Fresh::NAMES), Shape::Template]),
    ),
    key(
        "tune",
        "Kernel settings for each visit, restored after it: CPU frequency, THP, the scratch devices' queues, sysctls.",
        Shape::AnyOf(&[Shape::Null, Shape::Keys(TUNE)]),
    ),
    key(
        "kernel",
        "The kernel the play's cells run under on each host: booted once before them (the default boot entry never changes) and left again after, the host back on its own kernel. Plays without roles.",
        Shape::Keys(KERNEL),
    ),
    key(
        "monitors",
        "Host monitors during every measured step: `true` (every second, the default), `false`, seconds between samples (at least 0.01), or a template giving one.",
        Shape::AnyOf(&[Shape::Bool, Shape::Number { min: Some(0.01), above: false, max: None }, Shape::Template]),
    ),
    key("setup", "Steps before a cell's repetitions (make a filesystem, write a tree).", Shape::Steps),
    key("before_each", "Steps before each repetition, not timed (drop caches).", Shape::Steps),
    key("benchmark", "The measured steps, run once per repetition.", Shape::Steps),
    key("teardown", "Steps after a cell (unmount), run even when it failed.", Shape::Steps),
];

/// Rules between a play's keys.
pub const PLAY_RULES: &[Rule] = &[
    Rule {
        when: Cond::Has("seed"),
        then: Cond::Is("cell_order", "shuffled"),
        about: "`seed` is for `cell_order: shuffled`",
    },
    Rule {
        when: Cond::NonEmpty("roles"),
        then: Cond::Not(&Cond::Has("serial")),
        about: "`serial` is for plays without roles",
    },
    Rule {
        when: Cond::Is("fresh", "round"),
        then: Cond::Not(&Cond::Is("cell_order", "sequential")),
        about: "`fresh: round` shares a setup among the cells of a round, and `cell_order: sequential` has no rounds",
    },
    Rule {
        when: Cond::Is("fresh", "round"),
        then: Cond::Not(&Cond::NonEmpty("roles")),
        about: "`fresh: round` is for plays without roles",
    },
    Rule {
        when: Cond::Has("kernel"),
        then: Cond::Not(&Cond::NonEmpty("roles")),
        about: "`kernel` is for plays without roles (for now)",
    },
];

/// A play's `kernel:` (`playbook::kernel`).
pub const KERNEL: &[Key] = &[
    key(
        "release",
        "An installed kernel, as `uname -r` names it (`6.12.9+bpo-amd64`), or `baseline`: the host's default kernel; or a template giving one. With `package`: the release the package must install (none: whatever it installs). `kernel` needs `release` or `package`.",
        Shape::AnyOf(&[Shape::Pattern(r"^[A-Za-z0-9._+~-]+$"), Shape::Template]),
    ),
    key(
        "package",
        "A kernel package on the controller (`.deb` or `.rpm`; relative to the playbook), or a template giving one: copied to each host, its sha256 checked there, installed with the host's dpkg or rpm, and removed once the host is back on its own kernel. A host that has that package already keeps it; one with another version of it is `unsupported`.",
        Shape::AnyOf(&[Shape::Pattern(r"^[^\n]*\.(deb|rpm)$"), Shape::Template]),
    ),
    key(
        "keep",
        "Leave the package installed after the play (it becomes the host's own).",
        Shape::Bool,
    ),
    key(
        "cmdline",
        "Kernel parameters appended to the host's own command line (`panic=10`).",
        Shape::AnyOf(&[Shape::Pattern(r"^[^\n]*$"), Shape::Template]),
    ),
    key(
        "boot",
        "How the kernel is booted once: `reboot` (a one-shot boot entry, GRUB's grub-reboot; the default) or `kexec` (no firmware, no bootloader).",
        Shape::AnyOf(&[Shape::Word(&["kexec", "reboot"]), Shape::Template]),
    ),
];

/// What a step may carry besides its one action (an `ACTION_NAMES` key).
pub const STEP: &[Key] = &[
    key("name", "The step's name in output (the action's when absent).", Shape::Scalar),
    key("role", "The role whose host runs the step (one of the play's `roles`); every host of the cell when absent.", Shape::Str),
    key(
        "when",
        "Conditions, all of which must hold: bare Jinja expressions as in Ansible (`fs == 'xfs'`, no braces) or booleans.",
        Shape::AnyOf(&[CONDITION, list(&CONDITION)]),
    ),
    key(
        "loop",
        "Run the step once per item (`{{ item }}`): a list, or a template giving one.",
        Shape::AnyOf(&[list(&Shape::Any), Shape::Template]),
    ),
    key("loop_control", "How `loop` names its items.", Shape::AnyOf(&[Shape::Null, Shape::Keys(LOOP_CONTROL)])),
    key("tags", "The step's tags (the play's are added): a list, or one string, comma-separated.", TAGS),
    key("ignore_errors", "A failure of this step does not fail the cell.", Shape::Bool),
    key("timeout", "Seconds: the step is cancelled and fails when it runs longer.", Shape::Int { min: 1, max: None }),
];

/// Rules between a step's keys (that it has exactly one action is the schema's own).
pub const STEP_RULES: &[Rule] =
    &[Rule { when: Cond::Has("loop_control"), then: Cond::Has("loop"), about: "`loop_control` without `loop`" }];

pub const LOOP_CONTROL: &[Key] =
    &[key("loop_var", "The name items take in templates (`item` by default).", Shape::Str)];

/// A playbook's `filesystem` step names a profile; the planner resolves it
/// (to `FilesystemArgs`, with the profile's mkfs and mount options).
pub const FILESYSTEM: &[Key] = &[
    must("device", "A scratch device name from the inventory's `scratch_devices`.", Shape::Str),
    must(
        "profile",
        "A filesystem profile: a built-in one (`ext4`, `xfs`, `btrfs`, …) or one of the play's `profiles`, or a template giving one.",
        Shape::Str,
    ),
];

pub const PROFILE: &[Key] = &[
    key("fstype", "The kernel's name for the filesystem (`/proc/filesystems`).", Shape::Str),
    key(
        "mkfs",
        "The mkfs command without the device, which benchrig appends: `mkfs.<type>` or `mke2fs` and its options, a string or a list.",
        WORDS,
    ),
    key("mount_options", "Mount options: a comma-separated string or a list.", WORDS),
];

pub const MATRIX: &[Key] = &[
    key(
        "exclude",
        "Partial points (axis: value): a cell matching every key of one is dropped.",
        Shape::AnyOf(&[Shape::Null, list(&Shape::Map(&Shape::Any))]),
    ),
    key(
        "include",
        "Extra points (axis: value) added after the product.",
        Shape::AnyOf(&[Shape::Null, list(&Shape::Map(&Shape::Any))]),
    ),
];

/// An adaptive `repeat`.
pub const REPEAT: &[Key] = &[
    key("min", "Repetitions before the interval is first looked at.", TEMPLATED_COUNT),
    must("max", "Repetitions at most.", TEMPLATED_COUNT),
    key(
        "ci_pct",
        "Stop when the confidence interval of each metric's mean is within ± this percentage of it (2 = ±2%).",
        Shape::Number { min: Some(0.0), above: true, max: None },
    ),
    key(
        "metrics",
        "The metrics whose interval decides (all when absent).",
        Shape::AnyOf(&[Shape::Null, list(&Shape::Str)]),
    ),
    key(
        "warmup",
        "Repetitions run first and not counted.",
        Shape::AnyOf(&[Shape::Int { min: 0, max: None }, Shape::Template]),
    ),
];

/// A kernel's word for a governor or a scheduler.
const KERNEL_WORD: Shape = Shape::AnyOf(&[Shape::Pattern(r"^[A-Za-z0-9_+-]+$"), Shape::Template]);

/// `enabled` or `enabled/defrag`, the words of `THP_ENABLED` and `THP_DEFRAG`
/// (a unit test holds them equal).
pub const THP_PATTERN: &str = r"^(always|madvise|never)(/(always|defer|defer\+madvise|madvise|never))?$";

/// A sysctl's name as /proc/sys has it (`TuneArgs::check_sysctl_name`).
pub const SYSCTL_NAME: &str = r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)+$";

/// A play's `tune:` (the agent's `TuneArgs`, less the devices, which the planner fills in).
pub const TUNE: &[Key] = &[
    key("governor", "cpufreq `scaling_governor` of every policy (`performance`).", KERNEL_WORD),
    key(
        "boost",
        "Boost/turbo on or off (`cpufreq/boost`, or `intel_pstate/no_turbo`).",
        Shape::AnyOf(&[Shape::Bool, Shape::Template]),
    ),
    key(
        "thp",
        "Transparent huge pages: `enabled`, or `enabled/defrag` (`madvise/defer`).",
        Shape::AnyOf(&[Shape::Pattern(THP_PATTERN), Shape::Template]),
    ),
    key("scheduler", "The I/O scheduler of the cell's scratch devices (`none`, `mq-deadline`).", KERNEL_WORD),
    key(
        "read_ahead_kb",
        "The cell's scratch devices' read-ahead, in KiB.",
        Shape::AnyOf(&[Shape::Int { min: 0, max: None }, Shape::Template]),
    ),
    key(
        "nr_requests",
        "The cell's scratch devices' queue depth.",
        Shape::AnyOf(&[Shape::Int { min: 1, max: None }, Shape::Template]),
    ),
    key(
        "swappiness",
        "`vm.swappiness`, 0 to 200.",
        Shape::AnyOf(&[Shape::Int { min: 0, max: Some(200) }, Shape::Template]),
    ),
    key(
        "sysctl",
        "Other sysctls by dotted name (`vm.dirty_ratio: 10`): a number or a one-line string each.",
        Shape::AnyOf(&[
            Shape::Null,
            Shape::Named {
                names: SYSCTL_NAME,
                of: &Shape::AnyOf(&[Shape::Number { min: None, above: false, max: None }, Shape::Pattern(r"^[^\n]*$")]),
            },
        ]),
    ),
];

/// The names of a table, for an unknown key's did-you-mean.
pub fn names(keys: &[Key]) -> Vec<&'static str> {
    keys.iter().map(|k| k.name).collect()
}

/// Whether a table has this key.
pub fn has(keys: &[Key], name: &str) -> bool {
    keys.iter().any(|k| k.name == name)
}
