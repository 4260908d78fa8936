//! Progress bars on stderr for long phases (indicatif), hidden when stderr is not a
//! terminal.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress bar for one phase.
pub(crate) struct Bar(ProgressBar);

impl Bar {
    /// A bar for `total` steps of `what`.
    pub(crate) fn new(what: &str, total: u64) -> Bar {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{msg:>12} [{bar:40}] {pos}/{len} ({eta} left)")
                .expect("the template is valid")
                .progress_chars("=> "),
        );
        bar.set_message(what.to_string());
        Bar(bar)
    }

    /// Moves the bar to `done`.
    pub(crate) fn set(&self, done: u64) {
        self.0.set_position(done);
    }

    /// Moves the bar to `done` of `total` steps, the total known only now.
    pub(crate) fn set_of(&self, done: usize, total: usize) {
        self.0.set_length(total as u64);
        self.0.set_position(done as u64);
    }

    /// Prints a line above the bar (on stderr, even when the bar is hidden).
    pub(crate) fn println(&self, line: String) {
        if self.0.is_hidden() {
            eprintln!("{line}");
        } else {
            self.0.println(line);
        }
    }

    /// Clears the bar.
    pub(crate) fn finish(self) {
        self.0.finish_and_clear();
    }
}
