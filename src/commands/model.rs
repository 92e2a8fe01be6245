//! `vouch model setup | list | serve`: flags to [`crate::llama`] calls, the listing, the endpoint line.

use anyhow::Result;

use crate::cli::{ModelArgs, ModelCommand, ModelListArgs, ModelServeArgs, ModelSetupArgs};
use crate::llama::assemble::{self, Expect, FileState};
use crate::llama::progress::mib;
use crate::llama::{
    build, setup, Cache, InstallTools, ModelChoice, ServeOptions, Server, SetupOptions, MODELS,
};
use crate::ui::Ui;

use super::{output, runtime};

pub fn run(args: ModelArgs) -> Result<i32> {
    match args.command {
        ModelCommand::Setup(a) => run_setup(a),
        ModelCommand::List(a) => run_list(a),
        ModelCommand::Serve(a) => run_serve(a),
    }
}

fn policy(install_tools: bool) -> InstallTools {
    if install_tools {
        InstallTools::Yes
    } else {
        InstallTools::Ask
    }
}

fn run_setup(args: ModelSetupArgs) -> Result<i32> {
    let opts = SetupOptions {
        cache: Cache::locate(args.cache.cache.as_deref()),
        model: ModelChoice::parse(&args.model)?,
        install_tools: policy(args.install_tools),
        verify: args.verify,
    };
    let ui = Ui::new(args.quiet);
    let ready = runtime::block_on(|cancel| async move {
        let ready = setup(&opts, &ui, &cancel).await;
        runtime::unless_interrupted(&cancel, ready)
    })?;
    // The same two lines as tests/llama/build.sh, for scripts.
    let mut out = output::stdout();
    out.print(&format!(
        "server={}\nmodel={}\n",
        ready.server.display(),
        ready.model.display()
    ))?;
    out.finish()?;
    Ok(0)
}

fn run_list(args: ModelListArgs) -> Result<i32> {
    let cache = Cache::locate(args.cache.cache.as_deref());
    let mut text = format!("cache: {}\n\n", cache.root.display());
    text.push_str(&format!(
        "{:<10} {:<12} {:>11}  {:<36} {}\n",
        "MODEL", "STATE", "SIZE", "TITLE", "PATH"
    ));
    for m in MODELS {
        let file = cache.model_file(m);
        let state = match assemble::check(
            &file,
            Expect {
                size: m.size,
                sha256: m.sha256,
            },
        ) {
            FileState::Verified => "ready",
            FileState::Unverified => "unverified",
            FileState::WrongSize(_) => "incomplete",
            FileState::Missing => "not set up",
        };
        text.push_str(&format!(
            "{:<10} {:<12} {:>11}  {:<36} {}\n",
            m.id,
            state,
            mib(m.size),
            m.title,
            file.display()
        ));
    }
    let server = cache.server();
    let runs = runtime::block_on(|cancel| async move {
        Ok(build::server_runs(&server, &cache.logs(), &cancel).await)
    })?;
    let server = Cache::locate(args.cache.cache.as_deref()).server();
    text.push_str(&format!(
        "\nllama-server: {} ({})\n",
        if runs {
            "built"
        } else if server.exists() {
            "present but does not run: `vouch model setup` rebuilds it"
        } else {
            "not built: `vouch model setup` builds it"
        },
        server.display()
    ));
    text.push_str("\n`unverified`: present without vouch's sha256 marker (`vouch model setup` checks it once).\n");
    let mut out = output::stdout();
    out.print(&text)?;
    out.finish()?;
    Ok(0)
}

fn run_serve(args: ModelServeArgs) -> Result<i32> {
    let cache = Cache::locate(args.cache.cache.as_deref());
    let opts = SetupOptions {
        cache: cache.clone(),
        model: ModelChoice::parse(&args.model)?,
        install_tools: policy(args.install_tools),
        verify: false,
    };
    if args.context == 0 {
        return Err(crate::error::VouchError::usage("--context must be at least 1").into());
    }
    let ui = Ui::new(false);
    runtime::block_on(|cancel| async move {
        let ready = runtime::unless_interrupted(&cancel, setup(&opts, &ui, &cancel).await)?;
        let mut serve_opts = ServeOptions::for_ready(&ready, &args.host, args.port, args.context);
        if let Some(t) = args.threads.filter(|t| *t > 0) {
            serve_opts.threads = t;
        }
        serve_opts.flash_attn = args.flash_attn;
        let log = cache.logs().join(format!("llama-server-{}.log", args.port));
        ui.line(&format!(
            "  starting llama-server: {} ({}, {} tokens of context, flash attention {})",
            ready.alias,
            crate::llama::serve::threads_text(serve_opts.threads),
            serve_opts.context,
            serve_opts.flash_attn
        ));
        let mut server =
            runtime::unless_interrupted(&cancel, Server::start(&serve_opts, &log, &cancel).await)?;
        let mut out = output::stdout();
        out.print(&format!(
            "serving {} at {} (OpenAI-compatible: {}/v1; log {}); Ctrl-C stops it\n",
            ready.alias,
            server.url,
            server.url,
            log.display()
        ))?;
        out.finish()?;
        let ended = server.supervise(&cancel).await;
        server.stop().await;
        ended?;
        ui.line("  llama-server stopped");
        Ok(0)
    })
}
