arg0buf4"
arg0
cpu€""
buf0
cpu€""
buf1
cpu€""
buf2
cpu€""
buf3
cpu€""
buf4
cpu€"2a2_
cpp_fused_relu_0cpuF// cpp_fused_relu_0: writes buf0
extern "C" void cpp_fused_relu_0() {}2a2_
cpp_fused_relu_1cpuF// cpp_fused_relu_1: writes buf1
extern "C" void cpp_fused_relu_1() {}2a2_
cpp_fused_relu_2cpuF// cpp_fused_relu_2: writes buf2
extern "C" void cpp_fused_relu_2() {}2a2_
cpp_fused_relu_3cpuF// cpp_fused_relu_3: writes buf3
extern "C" void cpp_fused_relu_3() {}2a2_
cpp_fused_relu_4cpuF// cpp_fused_relu_4: writes buf4
extern "C" void cpp_fused_relu_4() {}2Z
Source Nodes: [relu]2

buf0
cpu€"2%:#
cpp_fused_relu_0cpuarg0buf02Z
Source Nodes: [relu]2

buf1
cpu€"2%:#
cpp_fused_relu_1cpubuf0buf12
buf02Z
Source Nodes: [relu]2

buf2
cpu€"2%:#
cpp_fused_relu_2cpubuf1buf22
buf12Z
Source Nodes: [relu]2

buf3
cpu€"2%:#
cpp_fused_relu_3cpubuf2buf32
buf22Z
Source Nodes: [relu]2

buf4
cpu€"2%:#
cpp_fused_relu_4cpubuf3buf42
buf3