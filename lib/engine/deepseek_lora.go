package engine

import "fmt"

// LoRA on DeepSeek-V3 models is placed as the service places it (the
// catalog's shapes, lib/peft): attention on q_a_proj (q_proj without
// q_lora_rank), kv_a_proj_with_mqa and o_proj, in the modQ, modK and modO
// slots; the dense MLP of the first layers; in MoE layers the routed
// experts (moe_lora.go) and the shared experts, mlp.shared_experts.*, in
// the dense slots modGate, modUp and modDown.

// mlaLoRASlot is loraSlot for a DeepSeek-V3 model.
func mlaLoRASlot(c Config, i int, ll *loraLayer, mod string) (slot **loraPair, in, out int, err error) {
	m, h := c.MLA, c.Hidden
	moe := c.IsMoELayer(i)
	w := c.mlpWidth(i)
	switch {
	case mod == "q_a_proj" && m.QLoraRank > 0:
		return &ll.q, h, m.QLoraRank, nil
	case mod == "q_proj" && m.QLoraRank == 0:
		return &ll.q, h, c.Heads * c.HeadDim, nil
	case mod == "kv_a_proj_with_mqa":
		return &ll.k, h, m.KVLoraRank + m.QKRopeDim, nil
	case mod == "o_proj":
		return &ll.o, c.Heads * m.VHeadDim, h, nil
	case (mod == "gate_proj" && !moe) || (mod == "shared_experts.gate_proj" && moe && w > 0):
		return &ll.gate, h, w, nil
	case (mod == "up_proj" && !moe) || (mod == "shared_experts.up_proj" && moe && w > 0):
		return &ll.up, h, w, nil
	case (mod == "down_proj" && !moe) || (mod == "shared_experts.down_proj" && moe && w > 0):
		return &ll.down, w, h, nil
	}
	return nil, 0, 0, fmt.Errorf("lora: target module %s of layer %d is not supported on a DeepSeek-V3 model "+
		"(adapt q_a_proj or q_proj, kv_a_proj_with_mqa, o_proj, the dense or shared experts' MLP, the experts and lm_head)", mod, i)
}

// addModule is NewTrainer's constructor of one adapted matrix.
type addModule func(path string, in, out int, slot **loraPair) *trainModule

// mlaTrainModules adds layer prefix p's latent attention adapters.
func mlaTrainModules(c Config, p string, tl *trainLayer, ll *loraLayer, add addModule) {
	m, h := c.MLA, c.Hidden
	if m.QLoraRank > 0 {
		tl.q = add(p+"self_attn.q_a_proj", h, m.QLoraRank, &ll.q)
	} else {
		tl.q = add(p+"self_attn.q_proj", h, c.Heads*c.HeadDim, &ll.q)
	}
	tl.k = add(p+"self_attn.kv_a_proj_with_mqa", h, m.KVLoraRank+m.QKRopeDim, &ll.k)
	tl.o = add(p+"self_attn.o_proj", c.Heads*m.VHeadDim, h, &ll.o)
}

// sharedTrainModules adds the shared experts' adapters of MoE layer
// prefix p, if the model has shared experts.
func sharedTrainModules(c Config, p string, tl *trainLayer, ll *loraLayer, add addModule) {
	w, h := c.sharedWidth(), c.Hidden
	if w == 0 {
		return
	}
	s := p + "mlp.shared_experts."
	tl.gate = add(s+"gate_proj", h, w, &ll.gate)
	tl.up = add(s+"up_proj", h, w, &ll.up)
	tl.down = add(s+"down_proj", w, h, &ll.down)
}

// attnTargets are the target_modules names of the attention adapters.
func (c Config) attnTargets() []string {
	switch {
	case c.MLA == nil:
		return []string{"q_proj", "k_proj", "v_proj", "o_proj"}
	case c.MLA.QLoraRank > 0:
		return []string{"q_a_proj", "kv_a_proj_with_mqa", "o_proj"}
	}
	return []string{"q_proj", "kv_a_proj_with_mqa", "o_proj"}
}
