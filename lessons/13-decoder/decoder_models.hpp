// Lesson 13's models for `attn summary`: seed 001's DecoderBlock, Decoder and Transformer
// (S = T = --seq).
#pragma once

#include "catalog.hpp"

namespace attn::lessons {

ModelDescription decoder_block_model(const ModelRequest& request);
ModelDescription decoder_model(const ModelRequest& request);
ModelDescription transformer_model(const ModelRequest& request);

}  // namespace attn::lessons
