//! Class mode for the terminal (`--class`): the web server started before the screen, its messages
//! carried on the app's own channel.

use crate::app::Msg;
use crate::class::ClassHandle;
use crate::cli::Cli;
use std::sync::mpsc::Sender;

/// Class mode's web server (`--class`), started before the screen so a port in use is a clear error.
pub fn start(cli: &Cli, msg_tx: &Sender<Msg>) -> anyhow::Result<Option<ClassHandle>> {
    let Some(addr) = &cli.classroom.class else {
        return Ok(None);
    };
    let tx = std::sync::Mutex::new(msg_tx.clone());
    let notify = Box::new(move |m| {
        if let Ok(tx) = tx.lock() {
            let _ = tx.send(Msg::Class(m));
        }
    });
    Ok(Some(ClassHandle::start(
        addr,
        usize::from(cli.classroom.class_max),
        notify,
    )?))
}
