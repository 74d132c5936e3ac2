//! `hedge data …`: look at and prepare data for the `--data` flags.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand, ValueEnum};
use hedge_data::images::{export_folder, ExportSelection, FASHION_MNIST_CLASSES, MNIST_CLASSES};
use hedge_data::Mnist;

#[derive(Subcommand)]
pub enum DataCommand {
    /// Write MNIST or Fashion-MNIST images as an image folder (`OUT/<class>/<n>.png`), the layout
    /// `hedge hib train --data` reads: to try it on real images, or to see the layout.
    ExportImages(ExportArgs),
    /// Read an image folder, an image .npz or a CSV table as the `--data` flags would, and print
    /// what hedge sees (classes, sizes, columns), or the first problem with the file and its fix.
    Check(CheckArgs),
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ExportSource {
    Mnist,
    FashionMnist,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ExportSplit {
    Train,
    Test,
}

#[derive(Args)]
pub struct ExportArgs {
    /// The IDX set under $HEDGE_DATA_DIR.
    #[arg(long, value_enum, default_value = "fashion-mnist")]
    dataset: ExportSource,
    #[arg(long, value_enum, default_value = "train")]
    split: ExportSplit,
    /// Images per class (the first ones of each class in file order, after `--skip`).
    #[arg(long, default_value_t = 500)]
    per_class: usize,
    /// Images of each class passed over first: exports with different `--skip` never share an
    /// image (e.g. `--skip 0 --per-class 500` as a validation set, `--skip 500` as probes).
    #[arg(long, default_value_t = 0)]
    skip: usize,
    /// Only these classes, by name, comma-separated (e.g. `dress,sandal,t-shirt`).
    #[arg(long, value_delimiter = ',')]
    classes: Vec<String>,
    /// A new (or empty) folder.
    #[arg(long)]
    out: PathBuf,
}

#[derive(Args)]
pub struct CheckArgs {
    /// An image folder, an image .npz, or a CSV file.
    path: PathBuf,
    /// For a CSV file: the target column.
    #[arg(long)]
    target: Option<String>,
    /// For a CSV file: a protected column.
    #[arg(long, requires = "target")]
    protected: Option<String>,
}

pub fn run(command: DataCommand) -> Result<()> {
    match command {
        DataCommand::ExportImages(args) => export(args),
        DataCommand::Check(args) => check(args),
    }
}

fn export(args: ExportArgs) -> Result<()> {
    let (folder, names) = match args.dataset {
        ExportSource::Mnist => ("mnist", &MNIST_CLASSES),
        ExportSource::FashionMnist => ("fashion-mnist", &FASHION_MNIST_CLASSES),
    };
    let data = Mnist::load(&hedge_data::data_dir()?.join(folder))?;
    let split = match args.split {
        ExportSplit::Train => &data.train,
        ExportSplit::Test => &data.test,
    };
    let selection =
        ExportSelection { count_per_class: args.per_class, skip_per_class: args.skip, classes: args.classes };
    let written = export_folder(split, names, &selection, &args.out)?;
    println!(
        "wrote {} images of {} classes ({} each: {}) to {}",
        written.iter().map(|(_, n)| n).sum::<usize>(),
        written.len(),
        args.per_class,
        written.iter().map(|(c, _)| c.as_str()).collect::<Vec<_>>().join(", "),
        args.out.display()
    );
    Ok(())
}

fn check(args: CheckArgs) -> Result<()> {
    let is_csv = args.path.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    if is_csv {
        let Some(target) = args.target else {
            anyhow::bail!("'{}' is a table: name its target column with --target COLUMN", args.path.display());
        };
        let mut spec = hedge_data::TableSpec::new(target);
        spec.protected = args.protected;
        let table = hedge_data::Table::read_csv(&args.path, &spec)?;
        // What every command refuses, refused here too: a numeric target goes through the
        // regression commands' checks (a constant target, too few rows for the splits).
        if table.target.column.levels().is_none() {
            table.regression(hedge_data::table::USER_SPLITS, hedge_data::table::USER_TEST_FRACTION)?;
        }
        println!("{}: {} rows, {} inputs", args.path.display(), table.rows(), table.features());
        println!("inputs: {}", table.feature_names.join(", "));
        for label in std::iter::once(&table.target).chain(table.protected.as_ref()) {
            match label.column.levels() {
                Some(levels) => println!("{}: text, {} values: {}", label.name, levels.len(), levels.join(", ")),
                None => println!("{}: numeric", label.name),
            }
        }
        return Ok(());
    }
    let set = hedge_data::ImageSet::read(&args.path)?;
    let counts = set.class_counts();
    println!(
        "{}: {} images of {} x {} pixels, {} channel(s), {} classes ({}–{} images each)",
        args.path.display(),
        set.len(),
        set.height,
        set.width,
        set.channels,
        counts.len(),
        counts.iter().min().unwrap_or(&0),
        counts.iter().max().unwrap_or(&0)
    );
    println!("classes: {}", set.class_names.join(", "));
    Ok(())
}
