//! `cargo run -p schedlab-topo --example topo -- MACHINE [CONFIG] [CPU...]`: prints
//! a machine and its domains (all CPUs, or the listed ones).
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let machine = args.first().map_or("kunpeng920", |s| s.as_str());
    let config = args.get(1).map_or("vanilla", |s| s.as_str());
    let m = match schedlab_topo::resolve_machine(machine) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let Some(cfg) = schedlab_topo::DomainConfig::named(config) else {
        eprintln!("unknown config {config}");
        std::process::exit(2);
    };
    let d = match schedlab_topo::build_domains(&m, &cfg) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let cpus: Vec<usize> = args.iter().skip(2).filter_map(|a| a.parse().ok()).collect();
    if cpus.is_empty() {
        print!("{}", schedlab_topo::format_topo(&m, &d));
    } else {
        print!("{}", schedlab_topo::format_machine(&m));
        for c in cpus {
            if let Some(cd) = d.cpus.get(c) {
                print!("{}", schedlab_topo::format_cpu(&m, cd));
            }
        }
    }
}
