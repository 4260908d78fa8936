//! The command line's help as people read it: commands grouped under headings with the
//! demo first, shell completions and the man page.

use anyhow::Context;
use clap::CommandFactory;

use crate::write_output;

/// The top-level commands under their headings, in the order `tailor --help` lists them.
/// Every command is in exactly one group (a test checks it).
const GROUPS: &[(&str, &[&str])] = &[
    ("Start here", &["demo"]),
    (
        "Profile, plan and simulate",
        &["profile", "plan", "simulate", "calibrate", "emulate"],
    ),
    ("Run live", &["run", "serve", "load", "fanout"]),
    ("Green datacenters", &["green"]),
    ("Tools", &["vectors", "completions", "man", "help"]),
];

/// The command line, with the top-level help grouped under [`GROUPS`]' headings.
pub(crate) fn command() -> clap::Command {
    let mut cmd = crate::Cli::command();
    cmd.build();
    let width = cmd
        .get_subcommands()
        .map(|s| s.get_name().len())
        .max()
        .unwrap_or(0);
    let mut groups = String::new();
    for (heading, names) in GROUPS {
        groups += &format!("{heading}:\n");
        for name in *names {
            let about = cmd
                .find_subcommand(name)
                .and_then(|s| s.get_about())
                .map(|a| a.to_string())
                .unwrap_or_default();
            groups += &format!("  {name:<width$}  {about}\n");
        }
        groups += "\n";
    }
    let template = format!(
        "{{before-help}}{{about-with-newline}}\n{{usage-heading}} {{usage}}\n\n{groups}\
         Options:\n{{options}}{{after-help}}"
    );
    let mut built = crate::Cli::command();
    built.build();
    let mut wide = Vec::new();
    wide_usages(&built, &mut Vec::new(), &mut wide);
    let mut cli = crate::Cli::command();
    for (path, usage) in wide {
        cli = with_usage(cli, &path, usage);
    }
    cli.help_template(template).after_help(
        "Run `tailor COMMAND --help` for a command's flags and examples; docs/cli.md has \
         them all.",
    )
}

/// Clap does not wrap usage lines: the usage of every command of `cmd` (built) wider
/// than [`USAGE_WIDTH`], broken between words with continuation lines indented, by the
/// path of subcommand names that leads to it.
fn wide_usages(cmd: &clap::Command, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
    for sub in cmd.get_subcommands() {
        path.push(sub.get_name().to_string());
        let usage = sub.clone().render_usage().to_string();
        let usage = usage.trim_start_matches("Usage:").trim().to_string();
        if usage.lines().count() == 1 && usage.chars().count() + 7 > USAGE_WIDTH {
            let mut lines = vec![String::new()];
            for word in usage.split(' ') {
                let line = lines.last_mut().expect("one line at least");
                let fits = 7 + line.chars().count() + 1 + word.chars().count() <= USAGE_WIDTH;
                if !line.is_empty() && !fits {
                    lines.push(format!("    {word}"));
                } else {
                    if !line.is_empty() {
                        line.push(' ');
                    }
                    line.push_str(word);
                }
            }
            out.push((path.clone(), lines.join("\n       ")));
        }
        wide_usages(sub, path, out);
        path.pop();
    }
}

/// `cmd` with the subcommand at `path` given `usage`.
fn with_usage(cmd: clap::Command, path: &[String], usage: String) -> clap::Command {
    match path {
        [] => cmd.override_usage(usage),
        [first, rest @ ..] => {
            let rest = rest.to_vec();
            cmd.mut_subcommand(first, move |sub| with_usage(sub, &rest, usage))
        }
    }
}

/// The widest usage line: 80 columns, the narrowest terminal people use.
const USAGE_WIDTH: usize = 80;

/// `tailor completions SHELL`.
pub(crate) fn completions(shell: clap_complete::Shell) -> anyhow::Result<()> {
    let mut cmd = command();
    write_output(None, |w| {
        clap_complete::generate(shell, &mut cmd, "tailor", w);
        Ok(())
    })
}

/// `tailor man`: the man page, roff on stdout; with `out_dir`, a page per command there.
pub(crate) fn man(out_dir: Option<&std::path::Path>) -> anyhow::Result<()> {
    if let Some(dir) = out_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        clap_mangen::generate_to(crate::Cli::command(), dir)
            .with_context(|| format!("cannot write the pages into {}", dir.display()))?;
        eprintln!("tailor: man pages written to {}", dir.display());
        return Ok(());
    }
    let page = clap_mangen::Man::new(crate::Cli::command());
    write_output(None, |w| {
        page.render(w)?;
        w.flush()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command's help, rendered at `width` columns, with its path.
    fn every_help(width: usize) -> Vec<(String, String)> {
        fn walk(cmd: &mut clap::Command, path: String, out: &mut Vec<(String, String)>) {
            out.push((path.clone(), cmd.render_long_help().to_string()));
            out.push((path.clone(), cmd.render_help().to_string()));
            let names: Vec<String> = cmd
                .get_subcommands()
                .map(|s| s.get_name().to_string())
                .collect();
            for name in names {
                let sub = cmd.find_subcommand_mut(&name).expect("listed");
                walk(sub, format!("{path} {name}"), out);
            }
        }
        let mut cmd = command().term_width(width);
        cmd.build();
        let mut out = Vec::new();
        walk(&mut cmd, "tailor".into(), &mut out);
        out
    }

    #[test]
    fn every_command_is_in_one_group() {
        let cmd = command();
        let mut grouped: Vec<&str> = GROUPS.iter().flat_map(|(_, n)| n.iter().copied()).collect();
        grouped.sort_unstable();
        let mut names: Vec<String> = cmd.get_subcommands().map(|s| s.get_name().into()).collect();
        names.push("help".into());
        names.sort_unstable();
        names.dedup();
        assert_eq!(grouped, names);
        let help = command().render_help().to_string();
        assert!(
            help.find("demo").unwrap() < help.find("profile").unwrap(),
            "{help}"
        );
    }

    #[test]
    fn help_fits_the_terminal_at_80_and_100_columns() {
        let mut wide = Vec::new();
        for width in [80, 100] {
            for (path, text) in every_help(width) {
                for line in text.lines() {
                    let n = line.chars().count();
                    if n > width {
                        wide.push(format!("`{path} --help` at {width}: {n} wide: {line}"));
                    }
                }
            }
        }
        wide.dedup();
        assert!(
            wide.is_empty(),
            "{} lines:\n{}",
            wide.len(),
            wide.join("\n")
        );
    }

    #[test]
    fn help_names_no_issue_date_or_outside_path() {
        let date = |l: &str| {
            l.as_bytes().windows(10).any(|w| {
                w[..4].iter().all(u8::is_ascii_digit)
                    && w[4] == b'-'
                    && w[5..7].iter().all(u8::is_ascii_digit)
                    && w[7] == b'-'
                    && w[8..].iter().all(u8::is_ascii_digit)
            })
        };
        let issue = |l: &str| {
            let lower = l.to_lowercase();
            lower
                .match_indices("issue")
                .any(|(i, _)| !lower[..i].ends_with(|c: char| c.is_ascii_alphabetic()))
                || l.match_indices('#')
                    .any(|(i, _)| l[i + 1..].starts_with(|c: char| c.is_ascii_digit()))
        };
        let outside = |l: &str| {
            ["../", "/work/", "shared/", "/tmp/", "/root/"]
                .iter()
                .any(|p| l.contains(p))
        };
        let mut bad = Vec::new();
        for (path, text) in every_help(100) {
            for line in text.lines() {
                if date(line) || issue(line) || outside(line) {
                    bad.push(format!("{path}: {line}"));
                }
            }
        }
        bad.dedup();
        assert!(bad.is_empty(), "{} lines:\n{}", bad.len(), bad.join("\n"));
    }

    #[test]
    fn completions_and_the_man_page_render() {
        let mut cmd = command();
        let mut bash = Vec::new();
        clap_complete::generate(clap_complete::Shell::Bash, &mut cmd, "tailor", &mut bash);
        let bash = String::from_utf8(bash).unwrap();
        assert!(
            bash.contains("complete -F") && bash.contains("green"),
            "{bash}"
        );
        let mut roff = Vec::new();
        clap_mangen::Man::new(crate::Cli::command())
            .render(&mut roff)
            .unwrap();
        let roff = String::from_utf8(roff).unwrap();
        assert!(roff.starts_with(".ie") || roff.contains(".TH"), "{roff}");
    }

    /// Every visible flag of `cmd` and its subcommands, with the command's path.
    fn every_flag(cmd: &clap::Command, path: &str, out: &mut Vec<(String, clap::Arg)>) {
        for a in cmd.get_arguments() {
            if a.get_long().is_some() && !a.is_hide_set() {
                out.push((path.to_string(), a.clone()));
            }
        }
        for s in cmd.get_subcommands() {
            every_flag(s, &format!("{path} {}", s.get_name()), out);
        }
    }

    #[test]
    fn flag_concepts_share_one_syntax() {
        let mut cmd = command();
        cmd.build();
        let mut flags = Vec::new();
        every_flag(&cmd, "tailor", &mut flags);
        let default = |a: &clap::Arg| -> Vec<String> {
            a.get_default_values()
                .iter()
                .map(|v| v.to_string_lossy().into_owned())
                .collect()
        };
        let value_names = |a: &clap::Arg| -> Vec<String> {
            a.get_value_names()
                .unwrap_or_default()
                .iter()
                .map(|v| v.to_string())
                .collect()
        };
        let help = |a: &clap::Arg| a.get_help().map(|h| h.to_string()).unwrap_or_default();
        let mut wrong = Vec::new();
        for (path, a) in &flags {
            let long = a.get_long().expect("filtered");
            let mut check = |ok: bool, what: &str| {
                if !ok {
                    wrong.push(format!("{path} --{long}: {what}"));
                }
            };
            match long {
                "seed" => check(default(a) == ["1"], "defaults to 1"),
                "arrivals" => check(default(a) == ["poisson"], "defaults to poisson"),
                "degrees" => check(
                    value_names(a) == ["DEGREES"],
                    "takes DEGREES (1..N or 1,2,4)",
                ),
                "percentile" => check(
                    help(a).contains("percent (99)"),
                    "takes percent (99) or a fraction",
                ),
                "shard" => check(value_names(a) == ["I/S"], "picks a corpus shard, I/S"),
                "format" => check(
                    a.get_possible_values()
                        .iter()
                        .any(|v| v.get_name() == "json"),
                    "prints json among its formats",
                ),
                _ => {}
            }
            // Durations carry their units in the value (10s, 250ms), not in the name.
            let unit_named = ["-ms", "-us", "-s", "-h", "-min"]
                .iter()
                .any(|u| long.ends_with(u))
                || ["seconds", "minutes", "hours", "millis"].contains(&long);
            check(!unit_named, "a flag named with its unit");
            if value_names(a).iter().any(|v| v.starts_with("DURATION")) {
                let defaults_have_units = default(a)
                    .iter()
                    .all(|d| d.split(',').all(|t| crate::concepts::parse_time(t).is_ok()));
                check(defaults_have_units, "a duration default without its unit");
            }
        }
        // Each older spelling rewrites to a flag that exists and takes a duration in the
        // older spelling's unit, and no flag is still named the older way.
        for &(old, new, unit) in crate::spellings::OLDER {
            let mut takers = 0;
            for (path, a) in &flags {
                if a.get_long() == Some(old) {
                    wrong.push(format!("{path} --{old}: an older spelling is still a flag"));
                }
                if a.get_long() == Some(new) {
                    takers += 1;
                    let alone = clap::Command::new("t").arg(
                        clap::Arg::new("v")
                            .long(new)
                            .value_parser(a.get_value_parser().clone()),
                    );
                    let value = format!("1{unit}");
                    if let Err(e) = alone.try_get_matches_from(["t", &format!("--{new}"), &value]) {
                        wrong.push(format!("{path} --{new} refuses {value}: {e}"));
                    }
                }
            }
            if takers == 0 {
                wrong.push(format!(
                    "--{old} rewrites to --{new}, which no command takes"
                ));
            }
        }
        // The replica choice is one flag in both the front end and the simulator.
        let routes: Vec<&String> = flags
            .iter()
            .filter(|(_, a)| a.get_long() == Some("route"))
            .map(|(p, _)| p)
            .collect();
        assert_eq!(
            routes,
            ["tailor fanout", "tailor simulate"]
                .map(String::from)
                .iter()
                .collect::<Vec<_>>()
        );
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }
}
