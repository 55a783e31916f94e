//! Chat templates: renders the GGUF's `tokenizer.chat_template` (Jinja) for one user message.
//!
//! Teaching note: an instruct model was trained on conversations wrapped in special tokens. The template
//! turns "What is 2+2?" into e.g. `<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n`, so
//! the model's next token is the start of the assistant's reply.

use super::gguf::{GgufFile, LoadError};
use minijinja::{context, Environment, Error, ErrorKind};

/// The model's chat template, if its GGUF has one.
pub fn chat_template(g: &GgufFile) -> Option<String> {
    g.get_string("tokenizer.chat_template")
        .filter(|t| !t.trim().is_empty())
}

/// Renders `template` for a conversation of one user message, ending with the assistant's turn open
/// (`add_generation_prompt = true`). Errors name the template problem; a template's own
/// `raise_exception(...)` becomes an error with its message.
pub fn render_chat(template: &str, user: &str, bos: &str, eos: &str) -> Result<String, LoadError> {
    let mut env = Environment::new();
    // Hugging Face renders chat templates with trim_blocks and lstrip_blocks on; do the same.
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    // Python string methods (`.strip()`, `.startswith()`, ...) that many templates call.
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    env.add_function("raise_exception", |msg: String| -> Result<String, Error> {
        Err(Error::new(ErrorKind::InvalidOperation, msg))
    });
    env.add_template("chat_template", template)
        .map_err(|e| LoadError::Other(format!("the chat template does not parse: {e:#}")))?;
    let tmpl = env
        .get_template("chat_template")
        .map_err(|e| LoadError::Other(format!("the chat template: {e:#}")))?;
    let messages = vec![context! { role => "user", content => user }];
    tmpl.render(context! {
        messages => messages,
        add_generation_prompt => true,
        bos_token => bos,
        eos_token => eos,
    })
    .map_err(|e| LoadError::Other(format!("rendering the chat template failed: {e:#}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_chatml_with_generation_prompt() {
        let t = "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] | trim }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
        let out = render_chat(t, "  Hi  ", "<s>", "</s>").unwrap();
        assert_eq!(
            out,
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
        );
    }

    #[test]
    fn bos_eos_and_python_methods() {
        let t = "{{ bos_token }}{{ messages[0].content.strip().upper() }}{{ eos_token }}";
        assert_eq!(render_chat(t, " ok ", "<s>", "</s>").unwrap(), "<s>OK</s>");
    }

    #[test]
    fn trim_and_lstrip_blocks_like_hugging_face() {
        let t = "  {% if true %}\nA\n  {% endif %}\nB";
        assert_eq!(render_chat(t, "", "", "").unwrap(), "A\nB");
    }

    #[test]
    fn raise_exception_is_an_error_with_its_message() {
        let t = "{% if messages[0]['role'] == 'user' %}{{ raise_exception('Only system roles here') }}{% endif %}";
        let err = render_chat(t, "x", "", "").unwrap_err().to_string();
        assert!(err.contains("Only system roles here"), "{err}");
    }

    #[test]
    fn broken_template_is_an_error() {
        let err = render_chat("{% for x in %}", "x", "", "")
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not parse"), "{err}");
    }
}
