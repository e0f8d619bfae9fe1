//! The image must be on the engine; it is pulled only when the user asked for it.

use super::client::Engine;
use super::error::{engine_message, is_not_found, DockerError};
use crate::error::Step;
use bollard::query_parameters::CreateImageOptions;
use futures_util::StreamExt;

pub async fn ensure(engine: &Engine, image: &str, pull: bool) -> Result<(), DockerError> {
    match engine.docker.inspect_image(image).await {
        Ok(_) => return Ok(()),
        Err(e) if is_not_found(&e) => {}
        Err(e) => return Err(DockerError::api(Step::Image, "looking up the image", e)),
    }
    if !pull {
        return Err(DockerError::ImageMissing {
            image: image.to_string(),
            host: engine.host.clone(),
        });
    }
    eprintln!("maibox: pulling {image} (--pull)");
    let opts = CreateImageOptions {
        from_image: Some(image.to_string()),
        ..Default::default()
    };
    let mut progress = engine.docker.create_image(Some(opts), None, None);
    while let Some(step) = progress.next().await {
        match step {
            Ok(info) => {
                if let Some(err) = info.error_detail.and_then(|d| d.message) {
                    return Err(DockerError::Pull {
                        image: image.to_string(),
                        why: err,
                    });
                }
            }
            Err(e) => {
                return Err(DockerError::Pull {
                    image: image.to_string(),
                    why: engine_message(&e),
                })
            }
        }
    }
    Ok(())
}
